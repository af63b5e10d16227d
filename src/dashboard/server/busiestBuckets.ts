import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import type { BucketStats, ThrottleStats } from '../../admin/types';
import { readTopBuckets } from '../../admin/unlessGone';
import type { WireBusiest, WireThrottleExtras } from '../wire';

/** A keyed throttle's top waiting buckets read one by one at each sample, as `watch` does: the cost is bounded whatever their number. */
export const BUSIEST_BUCKETS = 3;

export interface BusiestReading {
  /** Per limit, the busiest bucket found. */
  windows: WireBusiest[];
  inFlight: WireThrottleExtras['inFlight'];
}

/**
 * Per limit, the busiest bucket the sample can know of without a scan. Unkeyed: the one bucket, whose count
 * throttleStats already read. Keyed: the highest `counted` among the top waiting buckets; a limit where none
 * waits gets no entry, since then no bucket holds a job back and the busiest one is unknown (a chart shows a
 * gap, not a made-up figure). Buckets at their limit with nothing waiting are not seen, so this is the busiest
 * of those holding jobs back, which is what a breach would look like. The same buckets give the busiest
 * concurrency (the unkeyed throttle's one bucket is read for it only when it has a concurrency).
 */
export async function readBusiest(admin: ThrottleAdmin, throttle: ThrottleStats): Promise<BusiestReading> {
  const readsBuckets = throttle.key !== null || throttle.concurrency !== null;
  const buckets = readsBuckets ? await readTopBuckets(admin, throttle, BUSIEST_BUCKETS) : [];
  const windows = throttle.key
    ? busiestPerWindow(throttle, buckets)
    : throttle.lastWindow.map((w) => ({ windowMs: w.windowMs, counted: w.delivered, max: w.max, key: [] }));
  return { windows, inFlight: busiestInFlight(buckets) };
}

function busiestPerWindow(throttle: ThrottleStats, buckets: readonly BucketStats[]): WireBusiest[] {
  const busiest: WireBusiest[] = [];
  for (const w of throttle.lastWindow) {
    let best: WireBusiest | undefined;
    for (const bucket of buckets) {
      // A bucket with limits of its own (setLimits with a key) may count other windows than the throttle's.
      const limit = bucket.limits.find((l) => l.windowMs === w.windowMs);
      if (limit && (!best || limit.counted > best.counted)) best = { windowMs: w.windowMs, counted: limit.counted, max: limit.max, key: bucket.key };
    }
    if (best) busiest.push(best);
  }
  return busiest;
}

function busiestInFlight(buckets: readonly BucketStats[]): WireThrottleExtras['inFlight'] {
  let best: WireThrottleExtras['inFlight'] = null;
  for (const bucket of buckets) {
    if (bucket.inFlight && (!best || bucket.inFlight.counted > best.counted)) best = { counted: bucket.inFlight.counted, max: bucket.inFlight.max, key: bucket.key };
  }
  return best;
}
