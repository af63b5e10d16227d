import fc from 'fast-check';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Missing, mostInAnyWindow, Throttle } from '../../src';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * The whole delivery path (classification, held sets, the delivery script, fetch-next) on random throttles and
 * random mixes of jobs: every limit of every bucket holds in every window, measured from processedOn, no job
 * is delivered twice, and every job is delivered in the end.
 */
const arbLimit = fc.record({ max: fc.integer({ min: 1, max: 6 }), windowMs: fc.integer({ min: 80, max: 300 }) });
const arbThrottles = fc.record({
  shared: fc.option(arbLimit, { nil: undefined }),
  perCustomer: arbLimit,
  missing: fc.constantFrom(Missing.SharedBucket, Missing.Unthrottled),
});
const arbJobs = fc.array(
  fc.record({ customer: fc.constantFrom('a', 'b', 'c', undefined), priority: fc.constantFrom(0, 0, 0, 1, 3), lifo: fc.boolean() }),
  { minLength: 5, maxLength: 40 },
);

describe('delivery path, property', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('never exceeds a limit, never delivers twice, and delivers everything', async () => {
    await fc.assert(fc.asyncProperty(arbThrottles, arbJobs, fc.integer({ min: 1, max: 6 }), async (shape, jobs, concurrency) => {
      const bed = new WorkerTestBed('dprop');
      try {
        const throttles = [
          Throttle.named('per-customer').key([Key.data('customer')]).whenKeyMissing(shape.missing).limit(shape.perCustomer.max, shape.perCustomer.windowMs),
          ...(shape.shared ? [Throttle.named('shared').limit(shape.shared.max, shape.shared.windowMs)] : []),
        ];
        const queue = bed.queue('prop');
        const seen: Job[] = [];
        bed.worker('prop', async (job) => { seen.push(job); }, { concurrency, throttles });
        await queue.addBulk(jobs.map((j, i) => ({
          name: 'n', data: j.customer === undefined ? { i } : { i, customer: j.customer },
          opts: { ...(j.priority ? { priority: j.priority } : {}), ...(j.lifo ? { lifo: true } : {}) },
        })));
        await waitFor(() => seen.length >= jobs.length, 30_000, `${jobs.length} deliveries`);
        await new Promise((r) => setTimeout(r, 50));
        expect(seen).toHaveLength(jobs.length);
        expect(new Set(seen.map((j) => j.id)).size).toBe(jobs.length);
        const times = (filter: (job: Job) => boolean) => seen.filter(filter).map((j) => j.processedOn!);
        for (const customer of ['a', 'b', 'c']) {
          expect(mostInAnyWindow(times((j) => j.data.customer === customer), shape.perCustomer.windowMs)).toBeLessThanOrEqual(shape.perCustomer.max);
        }
        if (shape.missing === Missing.SharedBucket) {
          expect(mostInAnyWindow(times((j) => j.data.customer === undefined), shape.perCustomer.windowMs)).toBeLessThanOrEqual(shape.perCustomer.max);
        }
        if (shape.shared) expect(mostInAnyWindow(times(() => true), shape.shared.windowMs)).toBeLessThanOrEqual(shape.shared.max);
      } finally {
        await bed.close(redis);
      }
    }), { numRuns: 12 });
  });
});
