/**
 * `npm run examples [-- <name> ...]`: runs each project of examples/ as a user would, against the package as
 * published. The package is built and packed once; each example is copied to a temporary folder, its
 * `bullmq-throttle` dependency pointed at the tarball, installed with npm (its other dependencies from the registry,
 * at the ranges its package.json gives) and run with `npm test` against a redis-server of its own (and a Redis
 * Cluster for the examples whose package.json asks for one). An example passes when `npm test` exits 0 and its
 * output's last line says what held (`held: ...`); CI runs them all after `npm test`.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { buildAndPack, ROOT } from '../packaging/support/packedPackage';
import { RedisCluster, startRedisCluster } from '../support/redisCluster';

const EXAMPLES = join(ROOT, 'examples');
// The line every example ends with when what it checked held (its README says what that is).
const HELD_LINE = /^held: /;

interface ExampleManifest {
  name: string;
  dependencies?: Record<string, string>;
  /** `"redis": "cluster"` asks the runner for a Redis Cluster (REDIS_CLUSTER_NODES) instead of one server. */
  bullmqThrottleExample?: { redis?: 'server' | 'cluster' };
}

interface Outcome {
  example: string;
  installS: number;
  runS: number;
  ok: boolean;
  lastLine: string;
}

interface Run {
  code: number;
  output: string;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}${error && code === 1 && !stderr ? String(error) : ''}` });
    });
  });
}

function manifestOf(dir: string): ExampleManifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as ExampleManifest;
}

/** The example in a folder of its own, `bullmq-throttle` taken from the tarball, installed. */
async function install(example: string, tarball: string, work: string): Promise<{ dir: string; seconds: number }> {
  const dir = join(work, example);
  cpSync(join(EXAMPLES, example), dir, { recursive: true, filter: (source) => !/node_modules|package-lock\.json$/.test(source) });
  const manifest = manifestOf(dir);
  if (!manifest.dependencies?.['bullmq-throttle']) throw new Error(`examples/${example}/package.json does not depend on bullmq-throttle`);
  manifest.dependencies['bullmq-throttle'] = `file:${tarball}`;
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const started = Date.now();
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], dir, {}, 600_000);
  if (installed.code !== 0) throw new Error(`npm install in examples/${example} failed:\n${installed.output}`);
  return { dir, seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const all = readdirSync(EXAMPLES, { withFileTypes: true }).filter((e) => e.isDirectory() && existsSync(join(EXAMPLES, e.name, 'package.json'))).map((e) => e.name).sort();
  const unknown = wanted.filter((name) => !all.includes(name));
  if (unknown.length > 0) throw new Error(`no example named ${unknown.join(', ')} in examples/ (there are: ${all.join(', ')})`);
  const examples = wanted.length > 0 ? wanted : all;

  const work = mkdtempSync(join(tmpdir(), 'bullmq-throttle-examples-'));
  // EXAMPLES_TARBALL: a tarball packed before (several runs side by side must not rebuild dist/ at once).
  const tarball = process.env.EXAMPLES_TARBALL ?? buildAndPack(work).tarball;
  // Installs wait on the registry, not a CPU: side by side. Runs one at a time, each on fresh Redis keys.
  const installs = await Promise.allSettled(examples.map((example) => install(example, tarball, work)));
  const redis = await startLocalRedisServer();
  let cluster: RedisCluster | undefined;
  const outcomes: Outcome[] = [];
  try {
    for (const [i, example] of examples.entries()) {
      const installed = installs[i];
      if (installed.status === 'rejected') {
        process.stderr.write(`${String(installed.reason)}\n`);
        outcomes.push({ example, installS: 0, runS: 0, ok: false, lastLine: 'npm install failed' });
        continue;
      }
      const env: NodeJS.ProcessEnv = { REDIS_URL: redis.url };
      if (manifestOf(installed.value.dir).bullmqThrottleExample?.redis === 'cluster') {
        cluster ??= await startRedisCluster();
        env.REDIS_CLUSTER_NODES = cluster.seeds.map((seed) => `${seed.host}:${seed.port}`).join(',');
      }
      const started = Date.now();
      const result = await run('npm', ['test', '--silent'], installed.value.dir, env, 300_000);
      const lines = result.output.trim().split('\n');
      const lastLine = lines[lines.length - 1] ?? '';
      const ok = result.code === 0 && HELD_LINE.test(lastLine);
      process.stdout.write(`--- examples/${example}: npm test exited ${result.code}\n${result.output.trimEnd()}\n`);
      outcomes.push({ example, installS: installed.value.seconds, runS: (Date.now() - started) / 1000, ok, lastLine });
    }
  } finally {
    await cluster?.stop();
    await redis.stop();
    rmSync(work, { recursive: true, force: true });
  }
  for (const o of outcomes) {
    process.stdout.write(`${o.ok ? 'PASS' : 'FAIL'} examples/${o.example} (install ${o.installS.toFixed(0)} s, run ${o.runS.toFixed(1)} s): ${o.lastLine}\n`);
  }
  const failed = outcomes.filter((o) => !o.ok).length;
  process.stdout.write(`examples: ${outcomes.length - failed} passed, ${failed} failed\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
