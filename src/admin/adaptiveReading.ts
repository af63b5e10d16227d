import { publishedAdaptive } from '../declarations/Adaptive';
import type { KeyValue } from '../declarations/Key';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { bucketKeyValues, UNKEYED_BUCKET } from '../keys/keyEncoding';
import { Limit } from '../declarations/Limit';
import { Rate } from '../declarations/Rate';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { adaptLimitInput, runAdaptLimit } from '../lua/calls/adaptLimit';
import { ScriptRunner } from '../lua/scripts';

/** A bucket's adaptive limit (Throttle.adaptive) as the delivery scripts hold it now. */
export interface AdaptiveLimitReading {
  /** The limit that adapts: 'rate', or a window limit's length (ms). */
  target: 'rate' | number;
  /** The live value every grant is held to now (a window's N, or a rate's n). */
  live: number;
  /** The most it rises to: the declared limit, or the declaration's `max`. */
  ceiling: number;
  /** The least it goes down to. */
  min: number;
  /** When a 429 last lowered it (ms, Redis clock); null once it is back at its ceiling. */
  loweredAt: number | null;
}

/** Reads the live value of the throttle's adaptive limit in one bucket (lua/adaptLimit-2.lua, reading); null when it has none. */
export async function readAdaptiveLimit(runner: ScriptRunner, keys: ThrottleKeys, throttle: EffectiveThrottle, bucket: string): Promise<AdaptiveLimitReading | null> {
  const spec = throttle.adaptiveSpec;
  if (!spec) return null;
  const reply = await runAdaptLimit(runner, adaptLimitInput(keys, throttle.name, bucket, false));
  if (!reply.adaptive) return null;
  return { target: spec.target, live: reply.after, ceiling: reply.ceiling, min: reply.min, loweredAt: reply.loweredAtMs > 0 ? reply.loweredAtMs : null };
}

/** What throttleStats shows of a throttle's adaptive limit over its buckets. */
export interface AdaptiveThrottleReading {
  /** The limit that adapts: 'rate', or a window limit's length (ms). */
  target: 'rate' | number;
  /** The most it rises to: the merged declared limit, or the declaration's `max`. */
  ceiling: number;
  /** The least it goes down to. */
  min: number;
  /** Buckets below their ceiling now (lowered by a 429 and not yet raised back). */
  loweredBuckets: number;
  /** An unkeyed throttle's one bucket: its live limit now; null for a keyed throttle (see `lowered`). */
  live: number | null;
  /** The buckets lowered latest (at most throttleStats' `top`), with their live limits. */
  lowered: {
    /** The bucket's key values, as in topBuckets ([] for an unkeyed throttle, null for the missing-key bucket). */
    key: KeyValue[] | null;
    /** Its live limit now. */
    live: number;
    /** When a 429 last lowered it (ms, Redis clock). */
    loweredAt: number | null;
  }[];
}

/**
 * Reads a throttle's adaptive limit over its buckets: the index's count and latest segments (read with its other
 * figures), then the live value of those and of an unkeyed throttle's bucket (lua/adaptLimit-3.lua, reading).
 */
export async function readAdaptiveThrottle(runner: ScriptRunner, keys: ThrottleKeys, throttle: EffectiveThrottle,
  adapted: { count: number; latest: readonly string[] } | null): Promise<AdaptiveThrottleReading | null> {
  const spec = throttle.adaptiveSpec;
  const published = spec && publishedAdaptive(spec, throttle.limits, throttle.tokenRate);
  if (!spec || !published || !adapted) return null;
  const unkeyed = throttle.keyParts ? null : await readAdaptiveLimit(runner, keys, throttle, UNKEYED_BUCKET);
  const lowered = [];
  for (const segment of adapted.latest) {
    const reading = await readAdaptiveLimit(runner, keys, throttle, segment);
    if (!reading || reading.loweredAt === null) continue;
    lowered.push({ key: bucketKeyValues(segment), live: reading.live, loweredAt: reading.loweredAt });
  }
  return {
    target: spec.target, ceiling: published.ceiling, min: published.min, loweredBuckets: adapted.count,
    live: unkeyed ? unkeyed.live : null, lowered,
  };
}

/** The limits a bucket counts against with its adaptive one at its live value (as lua/includes/adaptiveLimit.lua applies it). */
export function adaptedLimits(limits: readonly Limit[], rate: Rate | undefined, reading: AdaptiveLimitReading | null): { limits: Limit[]; rate: Rate | undefined } {
  if (!reading) return { limits: [...limits], rate };
  const { target, live } = reading;
  return {
    limits: limits.map((l) => (target === l.windowMs && l.max > live ? { ...l, max: live } : l)),
    rate: target === 'rate' && rate && rate.n > live ? { ...rate, n: live } : rate,
  };
}
