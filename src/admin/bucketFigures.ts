import { Limit } from '../declarations/Limit';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { QueueThrottleStatsKeys } from '../keys/ThrottleKeys';
import { readCounter } from './readCounter';
import { readInFlight } from './readInFlight';
import { RateReading, readRate } from './rateReading';
import { runTogether, SnapshotRead } from './snapshotRead';
import { FigureSource } from './throttleFigures';
import { bucketPauseInForce } from '../queueState/throttlePauses';

/** One bucket's figures, read at one moment (per node). */
export interface BucketFigures {
  /** The namespace node's time of the read (ms). */
  nowMs: number;
  limits: { windowMs: number; max: number; counted: number; roomAt: number | null }[];
  rate: RateReading | null;
  inFlight: { max: number; counted: number; leased: number } | null;
  /** Until when it is paused (ms; null: until resumed); undefined: not paused. */
  pausedUntil: number | null | undefined;
  /** Jobs waiting on it, over the queues. */
  waiting: number;
}

/**
 * Reads what throttleBucket reports of one bucket so that its figures agree ("full" never beside "room now"):
 * its counters against `limits` (the limits in force, overrides read before), its rate and concurrency, its
 * pauses, in one script on the namespace's node (lua/readSnapshot-n.lua); the jobs waiting on it in one per
 * queue, or in the same script on one Redis server.
 */
export async function readBucketFigures(source: FigureSource, throttle: EffectiveThrottle, bucket: string, limits: readonly Limit[], queues: readonly QueueThrottleStatsKeys[]): Promise<BucketFigures> {
  const { keys } = source;
  const name = throttle.name;
  const ns = new SnapshotRead();
  const counters = limits.map((limit) => ({ limit, read: ns.hgetall(keys.windowCounter(name, bucket, limit.windowMs)) }));
  const rate = throttle.tokenRate ? { state: ns.get(keys.rateCounter(name, bucket)), leaseMs: ns.hget(keys.effectiveLimits(name), 'rh') } : null;
  const inFlight = throttle.maxInFlight === undefined ? null : ns.hgetall(keys.inFlightCounter(name, bucket));
  const pauseAll = ns.hget(keys.throttlePauses(name), '*');
  const pauseOwn = ns.hget(keys.throttlePauses(name), bucket);
  const waiting = queues.map((q) => {
    const read = source.oneNode ? ns : new SnapshotRead();
    return { read, score: read.zscore(q.waiting, bucket) };
  });
  const snapshotOf = await runTogether(ns, source.namespace, waiting.map((w) => w.read), source.queues);
  const snapshot = snapshotOf(ns);
  const now = snapshot.nowMs;
  return {
    nowMs: now,
    limits: counters.map(({ limit, read }) => {
      const reading = readCounter(read(snapshot), limit.max, limit.windowMs, now);
      return { windowMs: limit.windowMs, max: limit.max, counted: reading.counted, roomAt: reading.roomAt };
    }),
    rate: rate && throttle.tokenRate ? readRate(throttle.tokenRate, rate.state(snapshot), Number(rate.leaseMs(snapshot) ?? 0), now) : null,
    inFlight: inFlight && throttle.maxInFlight !== undefined ? readInFlight(throttle.maxInFlight, inFlight(snapshot)) : null,
    pausedUntil: bucketPauseInForce(pauseAll(snapshot), pauseOwn(snapshot), now),
    waiting: waiting.reduce((sum, w) => sum + Math.max(0, w.score(snapshotOf(w.read)) ?? 0), 0),
  };
}
