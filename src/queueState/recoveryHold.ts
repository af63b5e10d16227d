import { Rate, rateFillMs } from '../declarations/Rate';
import { Limit } from '../declarations/Limit';
import { encodeSegment } from '../keys/keyEncoding';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';

/** A throttle held after the Redis node counting it restarted or was promoted (lua/includes/recoveryHold.lua). */
export interface RecoveryHold {
  /** Until when (ms, Redis clock) nothing of the throttle is delivered. */
  until: number;
  /**
   * 'window': for its longest window (its deliveries may be lost with the node); 'lease': for h and a margin;
   * 'gather': until the live workers and leased queues have told what they delivered (src/worker/recovery/deliveryMemory.ts, lua/reportQueueHistory-1.lua), at most until.
   */
  kind: 'window' | 'lease' | 'gather';
}

/**
 * The hold in force on the throttle `name` with these limits at `now`, as the delivery scripts work it out
 * (lua/includes/recoveryHold.lua): the namespace's hold, or the throttle's own (a queue that could not tell
 * the grantor what it delivered holds the throttles it declares for their longest window); null when none.
 */
export async function readRecoveryHold(client: RedisClient, keys: ThrottleKeys, throttle: HeldThrottle, now: number): Promise<RecoveryHold | null> {
  const record = await client.hmget(keys.grantorRecord, ...RECOVERY_FIELDS);
  const own = record[3] === '1' ? await client.hget(keys.grantorHolds, encodeSegment(throttle.name)) : null;
  return recoveryHoldFrom(record, own, throttle, now);
}

type HeldThrottle = { name: string; limits: readonly Limit[]; tokenRate?: Rate };

/** The fields of the grantor record recoveryHoldFrom reads, in its order. */
export const RECOVERY_FIELDS = ['holdFrom', 'hold', 'holdMs', 'perThrottle', 'gathering', 'gatherUntil'] as const;

/**
 * The hold in force at `now`, from the grantor record's RECOVERY_FIELDS and the throttle's own hold (its field of
 * ThrottleKeys.grantorHolds; only read where perThrottle is '1').
 */
export function recoveryHoldFrom(record: readonly (string | null)[], ownHold: string | null, throttle: HeldThrottle, now: number): RecoveryHold | null {
  const { limits, tokenRate } = throttle;
  const [from, hold, holdMs, perThrottle, gathering, gatherUntil] = record;
  if (from === null) return null;
  const gatheringNow = hold === 'gather' && Boolean(gathering);
  const kind = hold === 'window' ? 'window' : gatheringNow ? 'gather' : 'lease';
  // A rate's state is never counted again: it holds until a burst had time to fill, whatever the hold.
  const fillMs = tokenRate ? rateFillMs(tokenRate) : 0;
  const longestWindow = Math.max(0, ...limits.map((limit) => limit.windowMs));
  const base = Number(from) + Number(holdMs ?? 0);
  // A gather holds no longer than the window hold would: by then what the node lost has left every window.
  const gatherEnd = gatheringNow ? Math.max(base, Math.min(Number(gatherUntil ?? 0), base + longestWindow)) : base;
  let until = kind === 'window' ? base + Math.max(fillMs, longestWindow) : gatherEnd + fillMs;
  if (perThrottle === '1') {
    const own = Number(ownHold ?? 0);
    if (own > until) return own > now ? { until: own, kind: 'window' } : null;
  }
  return until > now ? { until, kind } : null;
}
