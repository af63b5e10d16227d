import { Redis } from 'ioredis';
import { Throttle, ThrottleAdmin } from '../../src';
import { DispatchDelay } from '../../src/worker/completion/dispatchDelay';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

describe('dispatch delay (processor start minus processedOn)', () => {
  it('puts the Redis and local clocks on one footing with the replies, and keeps p50 and p99', () => {
    const delay = new DispatchDelay();
    // Before any reply nothing can be measured.
    delay.started(1_000, 5_000);
    expect(delay.percentiles()).toBeNull();
    // The local clock runs 4,000 ms ahead; the fastest reply arrived 1 ms after its Redis time.
    delay.clockSample(10_000, 14_003);
    delay.clockSample(10_010, 14_011);
    for (let i = 0; i < 99; i++) delay.started(20_000, 24_001 + 2);
    delay.started(20_000, 24_001 + 40);
    expect(delay.percentiles()).toEqual({ p50: 2, p99: 40, samples: 100, processingMs: null });
    // Processors' run times: their mean, which turns a concurrency into a rate.
    for (const ms of [10, 20, 30, 60]) delay.ended(ms);
    expect(delay.percentiles()!.processingMs).toBe(30);
  });

  it('throttleStats reports it from the live workers, with the leaseMs that covers it', async () => {
    const redis: Redis = newRedis();
    const bed = new WorkerTestBed('dispatch');
    const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
    try {
      const queue = bed.queue('timed');
      let done = 0;
      bed.worker('timed', async () => { done++; }, { concurrency: 4, declarationTtlMs: 1_500, throttles: [Throttle.named('api').limit(500, '1s')] });
      await queue.addBulk(Array.from({ length: 50 }, () => ({ name: 'call', data: {} })));
      await waitFor(async () => done === 50 && (await admin.throttleStats('api')).dispatchDelay?.samples === 50, 15_000, 'the delays published');
      const { dispatchDelay } = await admin.throttleStats('api');
      expect(dispatchDelay!.p50Ms).toBeGreaterThanOrEqual(0);
      expect(dispatchDelay!.p99Ms).toBeGreaterThanOrEqual(dispatchDelay!.p50Ms);
      expect(dispatchDelay!.suggestedLeaseMs).toBe(Math.ceil(dispatchDelay!.p99Ms));
      expect(dispatchDelay!.processingMs).toBeGreaterThanOrEqual(0);
      process.stderr.write(`dispatch delay on this machine: p50 ${dispatchDelay!.p50Ms} ms, p99 ${dispatchDelay!.p99Ms} ms\n`);
    } finally {
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    }
  });
});
