import { Redis } from 'ioredis';
import { Throttle, ThrottleKeys } from '../../src';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

// A throttle's published limits gone while its jobs are held (the node restarted from a snapshot taken before
// they were published, as in restartFromSnapshot, or lost them otherwise): its classes wait and are looked at
// again, and go once the limits are published again. They were marked stale although their generation was
// current, and no list held them any more: the jobs stayed held for good (found under load in CI rehearsals).
describe('limits missing while jobs are held', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('limitsgone');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('a class whose throttle has no limits waits and goes once another registration publishes them again', async () => {
    const throttles = [Throttle.named('api').limit(5, '1s')];
    const queue = bed.queue('gone');
    const done: string[] = [];
    bed.worker('gone', async (job) => { done.push(job.id!); }, { throttles });
    await queue.add('first', {});
    await waitFor(() => done.length === 1, 10_000, 'the first job');
    const limitsKey = new ThrottleKeys(bed.prefix).effectiveLimits('api');
    await redis.del(limitsKey);
    await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'held', data: { i } })));
    // Looked at while the limits are gone: held, delivered nowhere.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(done).toHaveLength(1);
    // A second worker's registration publishes the throttle's limits again.
    bed.worker('gone', async (job) => { done.push(job.id!); }, { throttles });
    await waitFor(async () => (await redis.exists(limitsKey)) === 1, 10_000, 'the limits published again');
    await waitFor(() => done.length === 4, 10_000, 'the three held jobs');
  });
});
