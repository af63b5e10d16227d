import { dirname, join } from 'node:path';

/**
 * The bullmq that `require('bullmq')` loads here: its version and where its raw Lua lives. Both are read
 * through the same resolution as the module itself, so a test run pointed at another install (jest's
 * moduleNameMapper, or test/support/bullmqLineHook.js in child processes) reads that install's Lua too.
 */
export function installedBullmqVersion(): string {
  return (require('bullmq/package.json') as { version: string }).version;
}

export function installedBullmqDir(): string {
  return dirname(require.resolve('bullmq/package.json'));
}

/** bullmq ships its commands' Lua, includes and all, under dist/cjs/commands in both lines. */
export function installedBullmqCommandsDir(): string {
  return join(installedBullmqDir(), 'dist', 'cjs', 'commands');
}

export type Version = readonly [number, number, number];

export function parseVersion(version: string): Version | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

export function compareVersions(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
