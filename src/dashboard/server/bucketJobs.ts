import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { bucketSegmentOf } from '../../admin/bucketSegment';
import type { KeyValue } from '../../declarations/Key';
import { encodeSegment } from '../../keys/keyEncoding';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import type { RedisClient } from '../../redis/connection';
import { effectiveThrottle, entriesDeclaring } from '../../queueState/queueConfig';
import type { WireBucketJobs } from '../wire';

/** Classes read per queue: jobs of one bucket usually fall in one class per queue, or a few. */
const CLASSES_READ = 50;

/**
 * The jobs waiting on one full bucket, per queue where its throttle is declared: the classes waiting on the
 * bucket (`w:<bucket id>`), then the first `limit` jobs of each in queue order. Ranges only, so the cost is
 * that of the jobs shown, whatever the number of buckets or of jobs waiting.
 */
export async function readBucketJobs(admin: ThrottleAdmin, client: RedisClient, name: string, key: readonly KeyValue[] | null, limit: number): Promise<WireBucketJobs[]> {
  const entries = await admin.liveEntries();
  const declaring = entriesDeclaring(entries, name);
  if (declaring.length === 0) return [];
  const bucketId = `${encodeSegment(name)}=${bucketSegmentOf(name, effectiveThrottle(entries, name), key)}`;
  const queues = new Map<string, { label: string; keys: ReturnType<ThrottleKeys['queue']> }>();
  for (const entry of declaring) {
    const label = entry.prefix === admin.keys.prefix ? entry.queue : `${entry.prefix}:${entry.queue}`;
    queues.set(label, { label, keys: new ThrottleKeys(entry.prefix, admin.keys.namespace).queue(entry.queue) });
  }
  const perQueue = await Promise.all([...queues.values()].map(async ({ label, keys }) => {
    const [classes, classCount] = await Promise.all([
      client.zrange(keys.waiters(bucketId), '0', String(CLASSES_READ - 1)),
      client.zcard(keys.waiters(bucketId)),
    ]);
    const read = await Promise.all(classes.map(async (member) => {
      const [first, total] = await Promise.all([
        client.zrange(keys.classJobs(member), '0', String(limit - 1), 'WITHSCORES'),
        client.zcard(keys.classJobs(member)),
      ]);
      const jobs: { id: string; order: number }[] = [];
      for (let i = 0; i < first.length; i += 2) jobs.push({ id: first[i], order: Number(first[i + 1]) });
      return { jobs, total };
    }));
    const ids = read.flatMap((r) => r.jobs).sort((a, b) => a.order - b.order).slice(0, limit).map((j) => j.id);
    return { queue: label, ids, total: read.reduce((sum, r) => sum + r.total, 0), complete: classCount <= CLASSES_READ };
  }));
  return perQueue.filter((q) => q.total > 0).sort((a, b) => a.queue.localeCompare(b.queue));
}
