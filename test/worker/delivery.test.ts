import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { getThrottledCount, Key, Missing, mostInAnyWindow, Throttle } from '../../src';
import { newRedis } from '../support/redis';
import { redisNowMs, waitFor, WorkerTestBed } from '../support/bullmq';

describe('ThrottledWorker delivery', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('delivery');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('delivers within every limit of every bucket, sets processedOn on the Redis clock, and keeps other buckets flowing', async () => {
    const queue = bed.queue('orders');
    const jobs = [
      ...Array.from({ length: 40 }, (_, i) => ({ name: 'charge', data: { customer: 'big', i } })),
      ...Array.from({ length: 6 }, (_, i) => ({ name: 'charge', data: { customer: `small-${i}` } })),
      ...Array.from({ length: 10 }, () => ({ name: 'email', data: {} })),
    ];
    await queue.addBulk(jobs);
    const seen: Job[] = [];
    const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(5, 500).limit(15, '2s');
    const before = await redisNowMs(redis);
    bed.worker('orders', async (job) => { seen.push(job); }, { concurrency: 8, throttles: [perCustomer] });
    await waitFor(() => seen.filter((j) => j.data.customer === 'big').length >= 15, 15_000, '15 big deliveries');
    const after = await redisNowMs(redis);
    const big = seen.filter((j) => j.data.customer === 'big').map((j) => j.processedOn!);
    expect(mostInAnyWindow(big, 500)).toBeLessThanOrEqual(5);
    expect(mostInAnyWindow(big, 2000)).toBeLessThanOrEqual(15);
    for (const job of seen) {
      expect(job.processedOn).toBeGreaterThanOrEqual(before);
      expect(job.processedOn).toBeLessThanOrEqual(after);
    }
    // The small customers and the emails never waited for the big backlog.
    expect(seen.filter((j) => j.name === 'email')).toHaveLength(10);
    expect(seen.filter((j) => String(j.data.customer).startsWith('small'))).toHaveLength(6);
    const counts = await queue.getJobCounts();
    const held = await getThrottledCount(queue);
    const total = Object.values(counts).reduce((a, b) => a + b, 0) + held.throttled;
    expect(total).toBe(jobs.length);
  });

  it('holds jobs that cannot go without a lock, an attempt or an active event', async () => {
    const queue = bed.queue('held');
    const added = await queue.addBulk([1, 2, 3].map((i) => ({ name: 'n', data: { i } })));
    const processed: string[] = [];
    bed.worker('held', async (job) => { processed.push(job.id!); }, { throttles: [Throttle.named('slow').limit(1, '1m')] });
    await waitFor(() => processed.length === 1, 10_000, 'one delivery');
    await new Promise((r) => setTimeout(r, 300));
    expect(processed).toEqual([added[0].id]);
    const events = await redis.xrange(`${bed.prefix}:held:events`, '-', '+');
    const activeIds = events.filter(([, fields]) => fields[1] === 'active').map(([, fields]) => fields[3]);
    expect(activeIds).toEqual([added[0].id]);
    for (const job of added.slice(1)) {
      expect(await redis.exists(`${bed.prefix}:held:${job.id}:lock`)).toBe(0);
      const [ats, atm, processedOn] = await redis.hmget(`${bed.prefix}:held:${job.id}`, 'ats', 'atm', 'processedOn');
      expect({ ats, atm, processedOn }).toEqual({ ats: null, atm: null, processedOn: null });
    }
    expect((await getThrottledCount(queue)).throttled).toBe(2);
  });

  it('gates fetch-next after a completion: a single slot stops at the limit', async () => {
    const queue = bed.queue('fetchnext');
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'n', data: { i } })));
    const processed: number[] = [];
    bed.worker('fetchnext', async (job) => { processed.push(job.processedOn!); }, { concurrency: 1, throttles: [Throttle.named('two').limit(2, '1m')] });
    await waitFor(() => processed.length === 2, 10_000, 'two deliveries');
    await new Promise((r) => setTimeout(r, 500));
    expect(processed).toHaveLength(2);
  });

  it('respects priority and lifo within a bucket', async () => {
    const queue = bed.queue('order');
    const order: string[] = [];
    const throttle = Throttle.named('one-at-a-time').limit(1, 150);
    // The worker exists first, so jobs are classified as they arrive and then paced one by one.
    const worker = bed.worker('order', async (job) => { order.push(job.name); }, { concurrency: 1, throttles: [throttle], autorun: false });
    await worker.waitUntilReady();
    await queue.add('first', {});
    await queue.add('second', {});
    await queue.add('urgent', {}, { priority: 1 });
    await queue.add('late-lifo', {}, { lifo: true });
    await queue.add('low', {}, { priority: 5 });
    void worker.run();
    await waitFor(() => order.length === 5, 10_000, 'five deliveries');
    expect(order).toEqual(['late-lifo', 'first', 'second', 'urgent', 'low']);
  });
});
