import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';
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
    for (const { name } of throttles) {
      const keys = queueKeys.throttleStats(name);
      const [count, oldest, time] = await Promise.all([
        client.hget(keys.stats, 'waiting'),
        client.zrange(keys.held, '0', '0', 'WITHSCORES'),
        client.time(),
      ]);
      const waiting = Math.max(0, Number(count ?? 0));
      if ((this.waiting.get(name) ?? false) === waiting > 0) continue;
      this.waiting.set(name, waiting > 0);
      const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
      this.emit('throttle:held', { throttle: name, waiting, oldestWaitingMs: oldest.length === 2 ? Math.max(0, nowMs - Number(oldest[1])) : null });
    }
  }
}
