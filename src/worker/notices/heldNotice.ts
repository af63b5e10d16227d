import { EffectiveThrottle } from '../../declarations/mergeDeclarations';
import { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { RedisClient } from '../../redis/connection';
import { redisTimeMs } from '../../redis/redisClock';
import { EmitThrottleEvent } from './throttleEvents';

/**
 * Emits `throttle:held` when jobs of this worker's queue begin waiting on a throttle's full buckets, and when
 * none waits any more: read on each heartbeat from the queue's own statistics of the throttle (lua/includes/
 * throttleStatsNotes.lua), emitted on change only.
 */
export class HeldNotice {
  private readonly waiting = new Map<string, boolean>();

  constructor(private readonly emit: EmitThrottleEvent) {}

  async check(client: RedisClient, queueKeys: QueueThrottleKeys, throttles: readonly EffectiveThrottle[]): Promise<void> {
    // The oldest waiting job and the clock are read only for a change (rare), and the clock once, on the node
    // holding the queue (whose clock the scripts wrote the waits' starts with).
    let nowMs: number | undefined;
    for (const { name } of throttles) {
      const keys = queueKeys.throttleStats(name);
      const waiting = Math.max(0, Number((await client.hget(keys.stats, 'waiting')) ?? 0));
      if ((this.waiting.get(name) ?? false) === waiting > 0) continue;
      this.waiting.set(name, waiting > 0);
      const oldest = await client.zrange(keys.held, '0', '0', 'WITHSCORES');
      nowMs ??= await redisTimeMs(client, queueKeys.state);
      this.emit('throttle:held', { throttle: name, waiting, oldestWaitingMs: oldest.length === 2 ? Math.max(0, nowMs - Number(oldest[1])) : null });
    }
  }
}
