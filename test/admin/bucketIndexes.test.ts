import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleAdmin } from '../../src';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

// throttleStats' activeBuckets and bucketsAtLimit count the buckets of every limit kind (lua/includes/bucketIndexes.lua):
// a rate's and a concurrency's busy buckets as much as a window's, each bucket once.
describe('throttleStats counts rate and concurrency buckets', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let admin: ThrottleAdmin;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('bucketidx');
    admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  });
  afterEach(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });

  const counts = async (name: string) => {
    const stats = await admin.throttleStats(name);
    return { active: stats.activeBuckets, atLimit: stats.bucketsAtLimit };
  };
  const jobs = (customers: Record<string, number>) =>
    Object.entries(customers).flatMap(([customer, n]) => Array.from({ length: n }, () => ({ name: 'send', data: { customer } })));

  /** A processor that holds its jobs until open() is called, and the customers of the jobs it started. */
  const gated = () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    const started: string[] = [];
    const processor = async (job: Job) => {
      started.push(job.data.customer);
      await gate;
    };
    return { processor, started, open };
  };

  it('rate only: every bucket with its stored time ahead is active, those without room for one more at their limit', async () => {
    // burst 2, then one per 10 minutes: a, b and c take both their tokens (full), d one (room for one more).
    const throttle = Throttle.named('mail').key([Key.data('customer')]).rate(1, '10m', { burst: 2 });
    const queue = bed.queue('mail');
    // Counted at processedOn (leaseMs 0): a job put back for starting late (a busy machine) spends its rate token
    // all the same, and one per 10 minutes would not come back within the test.
    bed.worker('mail', async () => undefined, { concurrency: 5, leaseMs: 0, throttles: [throttle] });
    await queue.addBulk(jobs({ a: 4, b: 3, c: 2, d: 1 }));
    await waitFor(async () => (await queue.getCompletedCount()) === 7, 20_000, '7 deliveries');
    expect(await counts('mail')).toEqual({ active: 4, atLimit: 3 });
    // The indexes hold times, not bands: a rate's buckets leave them by themselves.
    const full = await redis.zrange(new ThrottleKeys(bed.prefix).throttleIndexes('mail').full, '0', '-1', 'WITHSCORES');
    for (let i = 1; i < full.length; i += 2) expect(Number(full[i])).toBeLessThan(1e15);
  });

  it('concurrency only: buckets with jobs in flight are active, those at n at their limit; none once the jobs ended', async () => {
    const throttle = Throttle.named('crawl').key([Key.data('customer')]).concurrency(2);
    const queue = bed.queue('crawl');
    const { processor, started, open } = gated();
    try {
      bed.worker('crawl', processor, { concurrency: 10, throttles: [throttle] });
      await queue.addBulk(jobs({ a: 3, b: 2, c: 1 }));
      await waitFor(() => started.length === 5, 20_000, '5 jobs in flight');
      expect(await counts('crawl')).toEqual({ active: 3, atLimit: 2 });
      open();
      await waitFor(async () => (await queue.getCompletedCount()) === 6, 20_000, 'every job completed');
      await waitFor(async () => (await counts('crawl')).active === 0, 20_000, 'no bucket active');
      expect(await counts('crawl')).toEqual({ active: 0, atLimit: 0 });
      const keys = new ThrottleKeys(bed.prefix);
      expect(await redis.zcard(keys.throttleIndexes('crawl').active)).toBe(0);
    } finally {
      open();
    }
  });

  it('window and concurrency on one throttle: each bucket counts once, at its limit by either kind; its window keeps it after its jobs', async () => {
    // a: 2 in flight (its concurrency full, its window 2 of 3, nothing waiting); b: 1 in flight.
    const throttle = Throttle.named('api').key([Key.data('customer')]).limit(3, '1m').concurrency(2);
    const queue = bed.queue('api');
    const keys = new ThrottleKeys(bed.prefix).throttleIndexes('api');
    const { processor, started, open } = gated();
    try {
      // leaseMs 0: on a loaded machine a start deadline put a's second job back and delivered it again before its
      // window token was given back, so the window read full for a moment and the index kept that note for the
      // window (3 in 1 min, atLimit 1 below). This test is about the indexes, not start deadlines.
      bed.worker('api', processor, { concurrency: 10, throttles: [throttle], leaseMs: 0 });
      await queue.addBulk(jobs({ a: 2, b: 1 }));
      await waitFor(() => started.length === 3, 20_000, '3 jobs in flight');
      expect(await counts('api')).toEqual({ active: 2, atLimit: 1 });
      open();
      await waitFor(async () => (await queue.getCompletedCount()) === 3, 20_000, 'every job completed');
      // The releases take the concurrency's part out; the windows still count a and b, neither full.
      await waitFor(async () => (await redis.zcount(keys.active, 1e15, '+inf')) + (await redis.zcount(keys.full, 1e15, '+inf')) === 0, 20_000, 'the releases');
      expect(await counts('api')).toEqual({ active: 2, atLimit: 0 });
      // A third delivery fills a's window: at its limit by the window now.
      await queue.add('send', { customer: 'a' });
      await waitFor(async () => (await queue.getCompletedCount()) === 4, 20_000, 'the third job of a');
      expect(await counts('api')).toEqual({ active: 2, atLimit: 1 });
    } finally {
      open();
    }
  });
});
