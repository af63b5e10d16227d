import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/adaptLimit-3.lua, in the namespace's slot: the live value of a throttle's adaptive limit in one bucket, read,
 * or lowered by a 429 (at most once a period: lua/includes/adaptiveLimit.lua).
 */
export const adaptLimitScript = fixedKeysScript('adaptLimit', ['adaptive', 'limits', 'lowered']);

/** The reply's second element when the throttle has no adaptive limit published. */
export const NOT_ADAPTIVE = -1;

export interface AdaptLimitInput {
  /** KEYS[1]: the bucket's adaptive limit (STRING, ThrottleKeys.adaptiveLimit). */
  readonly adaptive: string;
  /** KEYS[2]: the throttle's limits (HASH, field a). */
  readonly limits: string;
  /** KEYS[3]: the throttle's lowered buckets (ZSET, ThrottleKeys.adaptedBuckets). */
  readonly lowered: string;
  /** ARGV[2]: the bucket's segment. */
  readonly segment: string;
  /** Lower it (a 429), or only read it. */
  readonly lower: boolean;
}

export interface AdaptiveReading {
  readonly adaptive: true;
  readonly nowMs: number;
  /** Whether this call lowered it (false when read, or within a period of the latest decrease). */
  readonly changed: boolean;
  readonly before: number;
  readonly after: number;
  readonly ceiling: number;
  readonly min: number;
  /** When it was last lowered (ms, the namespace node's clock), while below its ceiling; 0 once back there. */
  readonly loweredAtMs: number;
}

/** The call for one bucket of a throttle (its name, its bucket's segment), reading it or lowering it. */
export function adaptLimitInput(keys: ThrottleKeys, name: string, segment: string, lower: boolean): AdaptLimitInput {
  return { adaptive: keys.adaptiveLimit(name, segment), limits: keys.effectiveLimits(name), lowered: keys.adaptedBuckets(name), segment, lower };
}

export type AdaptLimitReply = { readonly adaptive: false; readonly nowMs: number } | AdaptiveReading;

export function runAdaptLimit(runner: ScriptRunner, input: AdaptLimitInput): Promise<AdaptLimitReply> {
  const keys = { adaptive: input.adaptive, limits: input.limits, lowered: input.lowered };
  return sendCall(runner, fixedCall(adaptLimitScript, keys, [input.lower ? '1' : '0', input.segment])).then((raw) => {
    const [nowMs, changed, before, after, ceiling, min, loweredAtMs] = (raw as number[]).map(Number);
    if (changed === NOT_ADAPTIVE) return { adaptive: false, nowMs };
    return { adaptive: true, nowMs, changed: changed === 1, before, after, ceiling, min, loweredAtMs };
  });
}
