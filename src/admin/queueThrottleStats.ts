import { QueueThrottleStatsKeys } from '../keys/ThrottleKeys';
import { addHoldFields, HOLD_FIELDS } from './holdTimes';
import { ScriptRunner } from '../lua/scripts';
import { RedisClient } from '../redis/connection';
import { redisTimeMs } from '../redis/redisClock';

/** What the queues where a throttle is declared keep of it, added up (see lua/includes/throttleStatsNotes.lua). */
export interface QueueThrottleTotals {
  waiting: number;
  delivered: number;
  limited: number;
  /** Leased tokens found expired unused. */
  expired: number;
  /** The longest any job now waiting on a full bucket of the throttle has waited (ms), over the queues; null: none waits. */
  oldestWaitingMs: number | null;
  /** The waits of jobs delivered after waiting, added up over the queues (src/admin/holdTimes.ts). */
  held: { waited: number; sumMs: number; byBound: number[] };
  /** Bucket segment -> jobs waiting on it, over the queues' top buckets. */
  waitingByBucket: Map<string, number>;
  /**
   * Per queue, its slots of longest/60 -> deliveries in it, with the time (ms) on the clock of the node
   * holding the queue, which numbered the slots: queues on several nodes are each compared with their own.
   */
  recent: { nowMs: number; slots: Map<number, number> }[];
}

/**
 * Reads each queue's statistics of one throttle and adds them up. Each queue keeps its own (in its own
 * slot), so a throttle shared by queues on several slots or servers is read from each: every command here
 * names one key, so a Cluster client sends it to the node holding that queue. The top buckets are
 * the sum of each queue's `top` busiest: exact when one queue holds a bucket's jobs, as it usually does.
 */
export async function readQueueThrottleTotals(client: RedisClient, queues: readonly QueueThrottleStatsKeys[], top: number, runner?: ScriptRunner): Promise<QueueThrottleTotals> {
  const totals: QueueThrottleTotals = {
    waiting: 0, delivered: 0, limited: 0, expired: 0, oldestWaitingMs: null, held: { waited: 0, sumMs: 0, byBound: [] }, waitingByBucket: new Map(), recent: [],
  };
  await Promise.all(queues.map(async (keys) => {
    const [nowMs, fields, topRaw, recent, oldest] = await Promise.all([
      redisTimeMs(client, keys.recent, runner),
      client.hmget(keys.stats, 'waiting', 'delivered', 'limited', 'expired', ...HOLD_FIELDS),
      top > 0 ? client.zrevrangebyscore(keys.waiting, '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, top) : Promise.resolve([] as string[]),
      client.hgetall(keys.recent),
      client.zrange(keys.held, '0', '0', 'WITHSCORES'),
    ]);
    totals.waiting += Math.max(0, Number(fields[0] ?? 0));
    totals.delivered += Number(fields[1] ?? 0);
    totals.limited += Number(fields[2] ?? 0);
    totals.expired += Number(fields[3] ?? 0);
    addHoldFields(totals.held, fields.slice(4));
    // Each queue's waits are on the clock of the node holding it.
    if (oldest.length === 2) totals.oldestWaitingMs = Math.max(totals.oldestWaitingMs ?? 0, nowMs - Number(oldest[1]));
    for (let i = 0; i < topRaw.length; i += 2) {
      totals.waitingByBucket.set(topRaw[i], (totals.waitingByBucket.get(topRaw[i]) ?? 0) + Number(topRaw[i + 1]));
    }
    totals.recent.push({ nowMs, slots: new Map(Object.entries(recent).map(([slot, count]) => [Number(slot), Number(count)])) });
  }));
  return totals;
}

/** Jobs of one bucket waiting, over every queue. */
export async function readBucketWaiting(client: RedisClient, queues: readonly QueueThrottleStatsKeys[], bucket: string): Promise<number> {
  const counts = await Promise.all(queues.map((keys) => client.zscore(keys.waiting, bucket)));
  return counts.reduce((sum, count) => sum + Math.max(0, Number(count ?? 0)), 0);
}
