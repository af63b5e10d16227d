import { UnknownQueueError } from '../errors/UnknownQueueError';
import { UnknownThrottleError } from '../errors/UnknownThrottleError';
import type { ThrottleAdmin } from './ThrottleAdmin';
import type { BucketStats, ThrottleStats } from './types';

/**
 * null for a queue or throttle that went away between two reads of a snapshot (`live()` or `queueStats()`, then its
 * stats): its last worker closed or its declarations lapsed meanwhile, so it is simply no longer shown. Readers
 * that show everything at once (watch, the metrics, the dashboard) share this, so none fails a whole refresh on it.
 */
export async function unlessGone<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof UnknownThrottleError || error instanceof UnknownQueueError) return null;
    throw error;
  }
}

/**
 * A throttle's top waiting buckets (at most `count`), each read with throttleBucket: the cost is bounded whatever the
 * number of buckets. An unkeyed throttle's one bucket. Buckets of a throttle that went away meanwhile are left out.
 */
export async function readTopBuckets(admin: ThrottleAdmin, throttle: ThrottleStats, count: number): Promise<BucketStats[]> {
  const keys = throttle.key ? throttle.topBuckets.slice(0, count).map((b) => b.key) : [null];
  const buckets = await Promise.all(keys.map((key) => unlessGone(admin.throttleBucket(throttle.name, key))));
  return buckets.filter((b): b is BucketStats => b !== null);
}
