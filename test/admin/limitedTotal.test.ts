import { Redis } from 'ioredis';
import { Throttle, ThrottleAdmin } from '../../src';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

/**
 * Issue 27: limitedTotal counts jobs, each once when it starts waiting on a full bucket, not re-checks. 10 jobs
 * on limit(2, '1m'): 2 go, 8 wait; raising the limit twice at run time wakes their class, which delivers and is
 * found full again each time, with the same jobs. A count of re-checks read 8 + 7 + 6 = 21 here.
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
    const worker = bed.worker('limited', async () => { done++; }, { concurrency: 10, throttles: [Throttle.named('api').limit(2, '1m')] });
    const admin = new ThrottleAdmin({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => admin.close());
    const settled = async (delivered: number) => {
      await waitFor(async () => done === delivered && (await admin.queueStats('limited')).heldByFullBuckets === 10 - delivered, 10_000, `${delivered} delivered, the rest held`);
      return admin.throttleStats('api');
    };
    // A job put back for starting late (a busy machine) goes back held, and waits again when its bucket is full:
    // it starts waiting once more, and is delivered once more.
    const expectLimited = (limited: number) => {
      expect(limited).toBeGreaterThanOrEqual(8);
      expect(limited).toBeLessThanOrEqual(8 + worker.startDeadline.putBack);
    };
    expectLimited((await settled(2)).limitedTotal);
    await admin.setLimits('api', [{ max: 3, window: '1m' }]);
    expectLimited((await settled(3)).limitedTotal);
    await admin.setLimits('api', [{ max: 4, window: '1m' }]);
    const stats = await settled(4);
    expectLimited(stats.limitedTotal);
    expect(stats.deliveredTotal).toBe(4);
  });
});
