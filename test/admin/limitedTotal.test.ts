import { Redis } from 'ioredis';
import { Throttle, ThrottleAdmin } from '../../src';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

/**
 * Issue 27: limitedTotal counts jobs, each once when it starts waiting on a full bucket, not re-checks. 10 jobs
 * on limit(2, 300ms): 2 go at once, 8 wait, and their class is woken and found full again four times on the way.
 * A count of re-checks read 8 + 6 + 4 + 2 = 20.
 */
describe('limitedTotal', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('limited');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('counts each job that waited once, however often its class is looked at again', async () => {
    const queue = bed.queue('limited');
    await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'call', data: { i } })));
    let done = 0;
    // Concurrency 10: the first delivery call takes all 10 from wait (2 go, 8 are held), so the answer is known.
    const worker = bed.worker('limited', async () => { done++; }, { concurrency: 10, throttles: [Throttle.named('api').limit(2, 300)] });
    await waitFor(() => done === 10, 10_000, '10 jobs');
    const admin = new ThrottleAdmin({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => admin.close());
    const stats = await admin.throttleStats('api');
    // A job put back for starting late (a busy machine) is delivered twice, and waits again only if its bucket is full.
    const putBack = worker.startDeadline.putBack;
    expect(stats.deliveredTotal).toBe(10 + putBack);
    expect(stats.limitedTotal).toBeGreaterThanOrEqual(8);
    expect(stats.limitedTotal).toBeLessThanOrEqual(8 + putBack);
  });
});
