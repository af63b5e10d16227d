import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { Limit } from '../declarations/Limit';
import { Rate } from '../declarations/Rate';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { runAdaptLimit } from '../lua/calls/adaptLimit';
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
  const reply = await runAdaptLimit(runner, { adaptive: keys.adaptiveLimit(throttle.name, bucket), limits: keys.effectiveLimits(throttle.name), lower: false });
  if (!reply.adaptive) return null;
  return { target: spec.target, live: reply.after, ceiling: reply.ceiling, min: reply.min, loweredAt: reply.loweredAtMs > 0 ? reply.loweredAtMs : null };
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
