import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';
import { BucketStats } from './types';

/** Waiting classes of a bucket looked at for a job's position: past this many, the position is a lower bound. */
const MOST_CLASSES = 100;

/**
 * Jobs ahead of a waiting job (its order score `order`, in class `member`) on the full bucket `bucketId` it
 * waits on: in its own class's list, and in the lists of the other classes waiting on that bucket, those of a
 * lower order (bullmq's order: priority, then first in first out), which take the bucket's room first.
 */
export async function positionInBucket(client: RedisClient, q: QueueThrottleKeys, member: string, order: number, bucketId: string): Promise<number> {
  const classes = await client.zrange(q.waiters(bucketId), '0', String(MOST_CLASSES - 1));
  if (!classes.includes(member)) classes.push(member);
  const ahead = await Promise.all(classes.map((c) => client.zcount(q.classJobs(c), '-inf', `(${order}`)));
  return ahead.reduce((sum, n) => sum + n, 0);
}

/**
 * When a job with `ahead` jobs before it on the bucket should go (ms, the bucket's clock), from the limits in
 * force (seed 002's "how long until the tokens are there"): room for the first returns at nextRoomAt; then a
 * window lets max more every window, a rate one every per / n, a concurrency n per processing time
 * (`processingMs`, what its workers measured; unknown: not counted). null while a pause without an end holds it.
 */
export function estimateStart(bucket: BucketStats, ahead: number, cost: number, processingMs: number | null): number | null {
  if (bucket.nextRoomAt === null) return null;
  const from = Math.max(bucket.nextRoomAt, bucket.at);
  const units = ahead * cost;
  let at = from;
  for (const limit of bucket.limits) at = Math.max(at, from + Math.floor(units / limit.max) * limit.windowMs);
  if (bucket.rate) at = Math.max(at, from + (units * bucket.rate.perMs) / bucket.rate.n);
  if (bucket.inFlight && processingMs !== null) at = Math.max(at, from + Math.floor(units / bucket.inFlight.max) * processingMs);
  return Math.round(at);
}
