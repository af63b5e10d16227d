import { QueueThrottleStatsKeys } from '../keys/ThrottleKeys';
import { addHoldFields, HOLD_FIELDS } from './holdTimes';
import { SnapshotRead, SnapshotValue } from './snapshotRead';

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

/** How one queue's statistics of one throttle are taken from a snapshot of the queue's slot (queueThrottleReading). */
export type QueueThrottleReading = SnapshotValue<{
  fields: (string | null)[];
  top: [string, number][];
  recent: Record<string, string>;
  oldest: [string, number] | null;
  nowMs: number;
}>;

/** Asks `read` (of the queue's slot) for what the queue keeps of one throttle. */
export function queueThrottleReading(read: SnapshotRead, keys: QueueThrottleStatsKeys, top: number): QueueThrottleReading {
  const fields = read.hmget(keys.stats, ['waiting', 'delivered', 'limited', 'expired', ...HOLD_FIELDS]);
  const topRead = top > 0 ? read.top(keys.waiting, top) : () => [] as [string, number][];
  const recent = read.hgetall(keys.recent);
  const oldest = read.first(keys.held);
  return (snapshot) => ({ fields: fields(snapshot), top: topRead(snapshot), recent: recent(snapshot), oldest: oldest(snapshot), nowMs: snapshot.nowMs });
}

/** No queue read yet. */
export function emptyQueueThrottleTotals(): QueueThrottleTotals {
  return { waiting: 0, delivered: 0, limited: 0, expired: 0, oldestWaitingMs: null, held: { waited: 0, sumMs: 0, byBound: [] }, waitingByBucket: new Map(), recent: [] };
}

/**
 * Adds one queue's statistics of the throttle to the totals. Each queue keeps its own (in its own slot), so a
 * throttle shared by queues on several slots or servers is read from each. The top buckets are the sum of each
 * queue's `top` busiest: exact when one queue holds a bucket's jobs, as it usually does.
 */
export function addQueueThrottleStats(totals: QueueThrottleTotals, reading: ReturnType<QueueThrottleReading>): void {
  const { fields, top, recent, oldest, nowMs } = reading;
  totals.waiting += Math.max(0, Number(fields[0] ?? 0));
  totals.delivered += Number(fields[1] ?? 0);
  totals.limited += Number(fields[2] ?? 0);
  totals.expired += Number(fields[3] ?? 0);
  addHoldFields(totals.held, fields.slice(4));
  // Each queue's waits are on the clock of the node holding it.
  if (oldest) totals.oldestWaitingMs = Math.max(totals.oldestWaitingMs ?? 0, nowMs - oldest[1]);
  for (const [segment, waiting] of top) totals.waitingByBucket.set(segment, (totals.waitingByBucket.get(segment) ?? 0) + waiting);
  totals.recent.push({ nowMs, slots: new Map(Object.entries(recent).map(([slot, count]) => [Number(slot), Number(count)])) });
}
