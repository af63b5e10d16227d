import { Registry } from 'prom-client';
import { Key, SlowDownError, Throttle, ThrottleAdmin } from '../../src';
import { formatBucketStats } from '../../src/cli/commands/bucket';
import { formatThrottleStats } from '../../src/cli/commands/throttle';
import { registerThrottleMetrics } from '../../src/metrics/registerThrottleMetrics';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { testRedisUrl } from '../support/testRedis';
import { seriesValue } from '../metrics/scenario';

// What operators see of adaptive limits: throttleStats and throttleBucket, the CLI's text and the metrics. Windows of
// 10 s: a limit lowered from 10 to 5 stays below its ceiling for the whole test (one step back each 10 s).
describe('adaptive limits in stats, the CLI and the metrics', () => {
  const redis = newRedis();
  const bed = new WorkerTestBed('adaptive-stats');
  const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  afterAll(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });

  it('a keyed throttle lists its lowered buckets; an unkeyed one shows its live limit; the CLI and the metrics say the same', async () => {
    const perCustomer = Throttle.named('partner-per-customer').key([Key.data('customer')]).limit(10, '10s').adaptive({ min: 1 });
    const whole = Throttle.named('partner').rate(20, '10s', { burst: 2 }).adaptive({ min: 2 });
    const queue = bed.queue('calls');
    const signalled = new Set<string>();
    const worker = bed.worker('calls', async (job) => {
      // Each customer's first call gets a 429 (the unkeyed throttle's bucket is lowered once: once a period).
      if (job.data.slow && !signalled.has(job.data.customer)) {
        signalled.add(job.data.customer);
        throw new SlowDownError();
      }
      return undefined;
    }, { concurrency: 4, throttles: [perCustomer, whole] });
    await worker.waitUntilReady();
    await queue.addBulk([
      { name: 'call', data: { customer: 'acme', slow: true } },
      { name: 'call', data: { customer: 'globex', slow: true } },
      { name: 'call', data: { customer: 'initech' } },
    ]);
    await waitFor(async () => (await admin.throttleStats('partner-per-customer')).adaptive?.loweredBuckets === 2, 20_000, 'two buckets lowered');

    const keyed = (await admin.throttleStats('partner-per-customer')).adaptive!;
    expect(keyed).toMatchObject({ target: 10_000, ceiling: 10, min: 1, loweredBuckets: 2, live: null });
    expect(keyed.lowered.map((b) => [b.key, b.live]).sort()).toEqual([[['acme'], 5], [['globex'], 5]]);
    const unkeyed = (await admin.throttleStats('partner')).adaptive!;
    expect(unkeyed).toMatchObject({ target: 'rate', ceiling: 20, min: 2, loweredBuckets: 1, live: 10 });
    const acme = await admin.throttleBucket('partner-per-customer', ['acme']);
    expect(acme.adaptive).toMatchObject({ live: 5, ceiling: 10 });
    expect(acme.limits).toEqual([expect.objectContaining({ windowMs: 10_000, max: 5 })]);
    expect((await admin.throttleBucket('partner-per-customer', ['initech'])).adaptive).toMatchObject({ live: 10, loweredAt: null });
    expect((await admin.throttleBucket('partner')).rate?.n).toBe(10);

    expect(formatThrottleStats(await admin.throttleStats('partner-per-customer'))).toMatch(/adaptive\s+2 buckets lowered by 429s \(the 10s limit, min 1, ceiling 10\): (acme 5, globex 5|globex 5, acme 5)/);
    expect(formatThrottleStats(await admin.throttleStats('partner'))).toMatch(/adaptive\s+live 10 \(the rate, min 2, ceiling 20\), lowered by 429s/);
    expect(formatBucketStats(acme)).toMatch(/adaptive\s+live 5 of 10 \(min 1\), lowered by a 429/);

    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: admin });
    try {
      const text = await registry.metrics();
      expect(seriesValue(text, 'bullmq_throttle_adaptive_limit{throttle="partner"}')).toBe(10);
      expect(seriesValue(text, 'bullmq_throttle_adaptive_lowered_buckets{throttle="partner-per-customer"}')).toBe(2);
      expect(seriesValue(text, 'bullmq_throttle_adaptive_limit{throttle="partner-per-customer"}')).toBeUndefined();
    } finally {
      await metrics.close();
    }
  }, 30_000);
});
