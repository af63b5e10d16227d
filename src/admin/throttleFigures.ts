import { EffectiveThrottle, longestSpanMs } from '../declarations/mergeDeclarations';
import { bucketKeyValues, encodeSegment, UNKEYED_BUCKET } from '../keys/keyEncoding';
import { QueueThrottleStatsKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { LimitOverride, overridesInForce } from './limitOverrides';
import { addQueueThrottleStats, emptyQueueThrottleTotals, queueThrottleReading, QueueThrottleTotals } from './queueThrottleStats';
import { readCounter } from './readCounter';
import { RECOVERY_FIELDS, RecoveryHold, recoveryHoldFrom } from '../queueState/recoveryHold';
import { runTogether, SnapshotRead } from './snapshotRead';
import { BucketSummary } from './types';
import { pausesInForce, ThrottlePause } from '../queueState/throttlePauses';

/** Where a throttle's figures are read. */
export interface FigureSource {
  readonly keys: ThrottleKeys;
  /** The namespace's node (the registry, counters, indexes, pauses, overrides, the grantor record). */
  readonly namespace: ScriptRunner;
  /** The queues' node(s). */
  readonly queues: ScriptRunner;
  /** The namespace and every queue on one Redis server (no Cluster, no separate grantor): one read takes all. */
  readonly oneNode: boolean;
}

/** A throttle's figures, each side read at one moment. */
export interface ThrottleFigures {
  /** The namespace node's time of the read (ms). */
  nowMs: number;
  activeBuckets: number;
  bucketsAtLimit: number;
  totals: QueueThrottleTotals;
  recoveryHold: RecoveryHold | null;
  paused: ThrottlePause | null;
  overrides: { throttle: LimitOverride | null; buckets: number };
  /** An unkeyed throttle's one bucket: what each limit counts in its window, in the order of its limits; null when keyed. */
  unkeyedCounted: number[] | null;
  /** With an adaptive limit: how many buckets are below its ceiling, and the `top` latest back (their segments). */
  adapted: { count: number; latest: string[] } | null;
}

/**
 * Reads what throttleStats reports of one throttle so that the figures add up: everything the namespace keeps
 * in one script (lua/readSnapshot-n.lua: buckets active and at their limit, pauses, overrides, the recovery hold,
 * an unkeyed bucket's counters, all at one Redis time), and each queue's statistics in one script on the queue's
 * slot; on one Redis server, all of it in one script.
 */
export async function readThrottleFigures(source: FigureSource, throttle: EffectiveThrottle, queues: readonly QueueThrottleStatsKeys[], top: number): Promise<ThrottleFigures> {
  const { keys } = source;
  const name = throttle.name;
  const ns = new SnapshotRead();
  const indexes = keys.throttleIndexes(name);
  const active = ns.live(indexes.active);
  const full = ns.live(indexes.full);
  const pauses = ns.hgetall(keys.throttlePauses(name));
  const overrides = ns.hgetall(keys.limitOverrides(name));
  const record = ns.hmget(keys.grantorRecord, RECOVERY_FIELDS);
  const ownHold = ns.hmget(keys.grantorHolds, [encodeSegment(name)]);
  const adapted = throttle.adaptiveSpec ? { count: ns.live(keys.adaptedBuckets(name)), latest: ns.top(keys.adaptedBuckets(name), top) } : null;
  const counters = throttle.keyParts ? null : throttle.limits.map((limit) => ({ limit, read: ns.hgetall(keys.windowCounter(name, UNKEYED_BUCKET, limit.windowMs)) }));
  const queueReads = queues.map((q) => {
    const read = source.oneNode ? ns : new SnapshotRead();
    return { read, reading: queueThrottleReading(read, q, top) };
  });
  const snapshotOf = await runTogether(ns, source.namespace, queueReads.map((q) => q.read), source.queues);
  const nsSnapshot = snapshotOf(ns);

  const totals = emptyQueueThrottleTotals();
  for (const q of queueReads) addQueueThrottleStats(totals, q.reading(snapshotOf(q.read)));
  const now = nsSnapshot.nowMs;
  return {
    nowMs: now,
    activeBuckets: active(nsSnapshot),
    bucketsAtLimit: full(nsSnapshot),
    totals,
    recoveryHold: recoveryHoldFrom(record(nsSnapshot), ownHold(nsSnapshot)[0], throttle, now),
    paused: pausesInForce(pauses(nsSnapshot), now),
    overrides: overridesInForce(overrides(nsSnapshot), now),
    unkeyedCounted: counters && counters.map(({ limit, read }) => readCounter(read(nsSnapshot), limit.max, limit.windowMs, now).counted),
    adapted: adapted && { count: adapted.count(nsSnapshot), latest: adapted.latest(nsSnapshot).filter(([, backAt]) => backAt > now).map(([segment]) => segment) },
  };
}

/** The buckets with the most jobs waiting, over the queues. */
export function topBucketsOf(totals: QueueThrottleTotals, top: number): BucketSummary[] {
  return [...totals.waitingByBucket]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([segment, waiting]) => ({ key: bucketKeyValues(segment), waiting }));
}

/**
 * What each limit counts in its last window: an unkeyed throttle's one counter says it exactly; a keyed one's
 * comes from the queues' statistics (slots of a sixtieth of the longest span, each queue's on its own node's clock).
 */
export function lastWindowOf(throttle: EffectiveThrottle, figures: ThrottleFigures): { windowMs: number; max: number; delivered: number }[] {
  const slotMs = Math.max(1, Math.floor(longestSpanMs(throttle) / 60));
  return throttle.limits.map((limit, i) => {
    let delivered = figures.unkeyedCounted?.[i] ?? 0;
    if (!figures.unkeyedCounted) {
      for (const queue of figures.totals.recent) {
        for (const [slot, count] of queue.slots) if ((slot + 1) * slotMs > queue.nowMs - limit.windowMs) delivered += count;
      }
    }
    return { windowMs: limit.windowMs, max: limit.max, delivered };
  });
}
