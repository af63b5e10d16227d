import { Registry } from 'prom-client';
import { Throttle } from '../../src';
import { registerThrottleMetrics } from '../../src/metrics/registerThrottleMetrics';
import { deleteKeysUnder, newRedis } from '../support/redis';
import { WorkerTestBed } from '../support/bullmq';
import { seriesValue } from './scenario';

describe('registerThrottleMetrics: throttlePrefix', () => {
  const redis = newRedis();
  const bed = new WorkerTestBed('metrics-namespace');
  const namespace = `${bed.prefix}-shared`;
  beforeAll(async () => {
    await bed.worker('mail', null, { throttlePrefix: namespace, throttles: [Throttle.named('smtp').limit(7, '1s')] }).waitUntilReady();
  });
  afterAll(async () => {
    await bed.close(redis);
    await deleteKeysUnder(redis, namespace);
    await redis.quit();
  });

  async function scrape(throttlePrefix?: string): Promise<string> {
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: redis, prefix: bed.prefix, throttlePrefix });
    try {
      return await registry.metrics();
    } finally {
      await metrics.close();
    }
  }

  it('reports the throttles of the namespace it names, and not those of the prefix\'s', async () => {
    const shared = await scrape(namespace);
    expect(seriesValue(shared, 'bullmq_throttle_effective_limit_jobs{throttle="smtp",window="1s"}')).toBe(7);
    expect(seriesValue(shared, 'bullmq_throttle_declaring_workers{queue="mail",throttle="smtp"}')).toBe(1);
    expect(seriesValue(await scrape(), 'bullmq_throttle_effective_limit_jobs{throttle="smtp",window="1s"}')).toBeUndefined();
  });
});
