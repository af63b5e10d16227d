import { Redis } from 'ioredis';
import { Throttle, ThrottleAdmin, ThrottleHeldEvent, ThrottlePausedEvent } from '../../src';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

/**
 * Issue 27: typed events on ThrottledWorker for held and paused changes (the recovery event is checked in
 * test/faults/recoveryFromWorkers.test.ts), emitted on the worker's heartbeat when they change.
 */
describe('throttle events on ThrottledWorker', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('events');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it("'throttle:held' when jobs begin waiting on a full bucket; 'throttle:paused' on a pause and its end", async () => {
    const queue = bed.queue('events');
    let done = 0;
    // A heartbeat every 200 ms.
    const worker = bed.worker('events', async () => { done++; }, { concurrency: 4, declarationTtlMs: 600, throttles: [Throttle.named('api').limit(1, '1m')] });
    const held: ThrottleHeldEvent[] = [];
    const paused: ThrottlePausedEvent[] = [];
    worker.on('throttle:held', (event) => held.push(event));
    worker.on('throttle:paused', (event) => paused.push(event));
    await worker.waitUntilReady();
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'call', data: { i } })));
    await waitFor(() => done === 1 && held.length > 0, 10_000, "the first delivered, then 'throttle:held'");
    expect(held[0]).toMatchObject({ throttle: 'api', waiting: 2 });
    expect(held[0].oldestWaitingMs).toBeGreaterThanOrEqual(0);

    const admin = new ThrottleAdmin({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => admin.close());
    const { until } = await admin.pause('api', { forMs: 60_000 });
    await waitFor(() => paused.length === 1, 5_000, "'throttle:paused'");
    expect(paused[0]).toEqual({ throttle: 'api', pause: { all: { until }, buckets: 0 } });
    await admin.resume('api');
    await waitFor(() => paused.length === 2, 5_000, "'throttle:paused' once resumed");
    expect(paused[1]).toEqual({ throttle: 'api', pause: null });
    // Nothing changed on the held side meanwhile: no second event.
    expect(held).toHaveLength(1);
  });
});
