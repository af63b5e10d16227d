// Which test files `npm run test:quick` leaves out: those that start a process of their own (a redis-server, a
// cluster or a sentinel, a worker or CLI child process, Chromium). A file counts as such when it or a test support
// module it imports (followed through test/, not into src/) loads node:child_process, playwright-core or
// src/devRedis/localRedisServer. Read from the sources at each run, so that a new test is sorted by what it does.
'use strict';
const { existsSync, readFileSync, readdirSync } = require('node:fs');
const { dirname, join, resolve, sep } = require('node:path');

const MARKERS = [/['"]node:child_process['"]/, /['"]playwright-core['"]/, /devRedis\/localRedisServer['"]/];

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function relativeImports(file) {
  const source = readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:from|import|require\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  return specifiers
    .map((specifier) => resolve(dirname(file), specifier))
    .map((base) => [`${base}.ts`, `${base}.js`, join(base, 'index.ts')].find(existsSync))
    .filter(Boolean);
}

function startsProcesses(file, testRoot, seen = new Set()) {
  if (seen.has(file)) return false;
  seen.add(file);
  if (MARKERS.some((marker) => marker.test(readFileSync(file, 'utf8')))) return true;
  return relativeImports(file)
    .filter((imported) => imported.startsWith(testRoot + sep))
    .some((imported) => startsProcesses(imported, testRoot, seen));
}

/** Absolute paths of the test files under `testRoot` that start processes of their own. */
function processStartingTests(testRoot) {
  return testFiles(testRoot).filter((file) => startsProcesses(file, testRoot));
}

module.exports = { processStartingTests };
