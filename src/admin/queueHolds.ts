import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';

/** What the throttle layer holds of one queue, read at one moment (QueueStats' figures add up). */
export interface QueueHolds {
  /** Jobs held in their classes (waiting for room, or about to go). */
  held: number;
  /** Of those, waiting on a full bucket. */
  blocked: number;
  /** Taken from wait and being classified. */
  classifying: number;
  /** When the job waiting longest on a full bucket began to (ms, the queue node's clock); null: none waits. */
  oldestWaitingSince: number | null;
  /** The queue node's clock at the read (ms). */
  nowMs: number;
}

/**
 * One transaction on the queue's slot (every key here is the queue's): the held and blocked counts, intake, the
 * oldest waiting job of each throttle and the node's time, so that no delivery script runs between them and
 * "held" never reads fewer than "on full buckets".
 */
export async function readQueueHolds(client: RedisClient, q: QueueThrottleKeys, throttles: readonly string[]): Promise<QueueHolds> {
  const transaction = client.multi().hmget(q.state, 'held', 'blocked').zcard(q.intake).time();
  for (const name of throttles) transaction.zrange(q.throttleStats(name).held, '0', '0', 'WITHSCORES');
  const replies = await transaction.exec();
  if (!replies) throw new Error(`readQueueHolds: the transaction on ${q.state} was discarded`);
  for (const [error] of replies) if (error) throw error;
  const [state, intake, time, ...oldest] = replies.map(([, value]) => value) as [(string | null)[], number, [string, string], ...string[][]];
  const since = oldest.filter((o) => o.length === 2).map((o) => Number(o[1]));
  return {
    held: Math.max(0, Number(state[0] ?? 0)),
    blocked: Math.max(0, Number(state[1] ?? 0)),
    classifying: Number(intake),
    oldestWaitingSince: since.length > 0 ? Math.min(...since) : null,
    nowMs: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000),
  };
}
