import { Limit } from '../declarations/Limit';
import { RedisClient } from '../redis/connection';

/** A throttle held after the Redis node counting it restarted or was promoted (lua/includes/recoveryHold.lua). */
export interface RecoveryHold {
  /** Until when (ms, Redis clock) nothing of the throttle is delivered. */
  until: number;
  /** 'window': for its longest window (its deliveries may be lost with the node); 'lease': for h and a margin. */
  kind: 'window' | 'lease';
}

/** The hold in force on a throttle with these limits at `now`, as the delivery scripts work it out; null when none. */
export async function readRecoveryHold(client: RedisClient, grantorRecord: string, limits: readonly Limit[], now: number): Promise<RecoveryHold | null> {
  const [from, hold, holdMs] = await client.hmget(grantorRecord, 'holdFrom', 'hold', 'holdMs');
  if (from === null) return null;
  const kind = hold === 'window' ? 'window' : 'lease';
  const until = Number(from) + Number(holdMs ?? 0) + (kind === 'window' ? Math.max(...limits.map((limit) => limit.windowMs)) : 0);
  return until > now ? { until, kind } : null;
}
