import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { InvalidOptionError, mostInAnyWindow, Throttle, ThrottleAdmin, ThrottleKeys } from '../../src';
import { capturingLogger, waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

describe('throttle namespaces', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('ns');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('queues of two bullmq prefixes sharing a throttlePrefix share one throttle', async () => {
    const name = `stripe-${bed.prefix}`;
    const namespace = `${bed.prefix}-shared`;
    const starts: number[] = [];
    const processor = async (job: Job) => { starts.push(job.processedOn!); };
    for (const side of ['a', 'b']) {
      const prefix = `${bed.prefix}-${side}`;
      await bed.queue('orders', { prefix }).addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'pay', data: { i } })));
      bed.worker('orders', processor, { prefix, throttlePrefix: namespace, concurrency: 4, throttles: [Throttle.named(name).limit(5, '1s')] });
    }
    await waitFor(() => starts.length === 24, 20_000, 'every job delivered');
    // Together, never more than 5 in any second: one throttle, not one per prefix.
    expect(mostInAnyWindow(starts, 1000)).toBeLessThanOrEqual(5);
    const admin = new ThrottleAdmin({ connection: redis, prefix: `${bed.prefix}-a`, throttlePrefix: namespace });
    try {
      const stats = await admin.throttleStats(name);
      expect(stats.queues).toEqual(['orders', `${bed.prefix}-b:orders`]);
      expect(stats.deliveredTotal).toBe(24);
    } finally {
      await admin.close();
      await redis.del(ThrottleKeys.namespacesOf(name));
    }
  });

  it('the same throttle name under two namespaces logs a warning naming both', async () => {
    const name = `twice-${bed.prefix}`;
    const { logger, lines } = capturingLogger();
    const first = bed.worker('mail', null, { prefix: `${bed.prefix}-x`, throttles: [Throttle.named(name).limit(5, '1s')] });
    await first.waitUntilReady();
    const second = bed.worker('mail', null, { prefix: `${bed.prefix}-y`, logger, throttles: [Throttle.named(name).limit(5, '1s')] });
    await second.waitUntilReady();
    try {
      const warning = lines.find((line) => line.throttle === name && line.level === 40);
      expect(warning?.namespaces).toEqual([`${bed.prefix}-y`, `${bed.prefix}-x`]);
      expect(warning?.msg).toContain('throttlePrefix');
    } finally {
      await redis.del(ThrottleKeys.namespacesOf(name));
    }
  });

  it('a namespace whose keys Redis Cluster would spread over every slot is refused at once', () => {
    expect(() => bed.worker('q', null, { throttlePrefix: 'a{}b', throttles: [Throttle.named('t').limit(1, '1s')] })).toThrow(InvalidOptionError);
    expect(() => new ThrottleAdmin({ connection: redis, throttlePrefix: '{}' })).toThrow(/empty hash tag/);
  });
});
