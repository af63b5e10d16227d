import { UnsupportedBullmqError } from '../errors/UnsupportedBullmqError';
import { BullmqAdapter } from './BullmqAdapter';
import { bullmq5 } from './bullmq5';
import { bullmq6 } from './bullmq6';
import { compareVersions, installedBullmqVersion, parseVersion, Version } from './installedBullmq';

const ADAPTERS: readonly BullmqAdapter[] = [bullmq5, bullmq6];

/** Every bullmq version ThrottledWorker is built and tested on, as package.json's peerDependencies says it. */
export const SUPPORTED_BULLMQ_RANGE = '^5.67.0 || ^6.0.0';

/** `>=a.b.c <x.y.z` (the only form the adapters use) holds `version`. */
function inRange(version: Version, range: string): boolean {
  const match = /^>=(\S+) <(\S+)$/.exec(range);
  const low = match && parseVersion(match[1]);
  const below = match && parseVersion(match[2]);
  if (!low || !below) throw new Error(`adapter range '${range}' is not of the form '>=a.b.c <x.y.z'`);
  return compareVersions(version, low) >= 0 && compareVersions(version, below) < 0;
}

/** The adapter of the bullmq line `version` belongs to (by default the installed bullmq's). */
export function selectAdapter(version: string = installedBullmqVersion()): BullmqAdapter {
  const parsed = parseVersion(version);
  const adapter = parsed && ADAPTERS.find((a) => inRange(parsed, a.supportedRange));
  if (!adapter) {
    throw new UnsupportedBullmqError(
      `bullmq-throttle supports bullmq ${SUPPORTED_BULLMQ_RANGE}, but bullmq ${version} is installed: ` +
        'install a supported version (npm install bullmq@6, or npm install bullmq@^5.67.0 to stay on bullmq 5).',
    );
  }
  return adapter;
}

/** The Lua variant of the installed bullmq's line; the newest line's when it is unsupported (the worker then refuses to start). */
export function defaultLuaVariant(): string {
  try {
    return selectAdapter().luaVariant;
  } catch {
    return ADAPTERS[ADAPTERS.length - 1].luaVariant;
  }
}
