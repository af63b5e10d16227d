import { formatDuration, formatPerSecond } from './format';
import type { WireBucket, WireThrottle } from '../wire';

/**
 * When a backlog is gone at what its limits sustain (ThrottleAdmin's `effective`: the least of N / W, the
 * rate's n / per and a concurrency over the measured processing time), after whatever stops it now (a pause,
 * a recovery hold, a full window). An estimate: the limits may change, and new jobs join the backlog.
 */
export interface DrainEstimate {
  /** 'drains in ~4m 57s', 'drains once resumed', ... */
  text: string;
  /** ms from now; null where there is no time to give. */
  ms: number | null;
}

/** `startsInMs`: how long until it may go at all; null: not before someone resumes it. */
export function drainEstimate(waiting: number, perSecond: number | null, startsInMs: number | null): DrainEstimate {
  if (waiting === 0) return { text: 'nothing waiting', ms: 0 };
  if (startsInMs === null) return { text: 'drains once resumed', ms: null };
  if (perSecond === null || perSecond <= 0) return { text: 'drain time unknown (no processing time measured yet)', ms: null };
  const ms = Math.max(0, startsInMs) + (waiting * 1000) / perSecond;
  return { text: `drains in ~${formatDuration(ms)} at ${formatPerSecond(perSecond)}`, ms };
}

/**
 * A throttle's backlog. A keyed throttle's buckets drain side by side, each at the per-bucket rate, so the
 * bucket with the most jobs waiting says when all are done.
 */
export function throttleDrain(t: WireThrottle): DrainEstimate {
  const waiting = t.key ? (t.topBuckets[0]?.waiting ?? 0) : t.waiting;
  return drainEstimate(waiting, t.effective?.perSecond ?? null, throttleStartsInMs(t));
}

/** How long until the throttle's buckets may deliver at all: its pause of every bucket, its recovery hold; null: when resumed. */
export function throttleStartsInMs(t: WireThrottle): number | null {
  let startsIn: number | null = 0;
  if (t.paused?.all) startsIn = t.paused.all.until === null ? null : t.paused.all.until - t.at;
  if (t.recoveryHold && startsIn !== null) startsIn = Math.max(startsIn, t.recoveryHold.until - t.at);
  return startsIn;
}

/** One bucket's backlog, from when room next returns (nextRoomAt counts a pause with an end in). */
export function bucketDrain(b: WireBucket): DrainEstimate {
  return drainEstimate(b.waiting, b.effective?.perSecond ?? null, b.nextRoomAt === null ? null : b.nextRoomAt - b.at);
}
