import { UnsupportedBullmqError } from '../errors/UnsupportedBullmqError';

/** The bullmq versions whose Lua includes and backend hooks ThrottledWorker is built and tested on. */
export const SUPPORTED_BULLMQ_RANGE = '>=6.7.0 <7.0.0';
const LOWEST = [6, 7, 0];
const BELOW = [7, 0, 0];

function parse(version: string): number[] | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? match.slice(1, 4).map(Number) : undefined;
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

export function installedBullmqVersion(): string {
  return (require('bullmq/package.json') as { version: string }).version;
}

export function assertSupportedBullmq(version: string = installedBullmqVersion()): void {
  const parsed = parse(version);
  if (!parsed || compare(parsed, LOWEST) < 0 || compare(parsed, BELOW) >= 0) {
    throw new UnsupportedBullmqError(
      `bullmq-throttle supports bullmq ${SUPPORTED_BULLMQ_RANGE}, but bullmq ${version} is installed: install a supported version (npm install bullmq@6).`,
    );
  }
}
