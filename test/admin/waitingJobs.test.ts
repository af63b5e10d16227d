import { Registry } from 'prom-client';
import { Redis } from 'ioredis';
import { Key, registerThrottleMetrics, Throttle, ThrottleAdmin } from '../../src';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { seriesValue } from '../metrics/scenario';

/**
 * Issue 27: what operators read of jobs that wait, with known answers. 10 jobs on limit(2, '1m'): 2 go at once, 8
 * wait; raising the limit twice at run time wakes their class, which delivers one and is found full again each
 * time, with the same jobs.
 * - limitedTotal counts each job once when it starts waiting (a count of re-checks read 15 here);
 * - the oldest waiting job's age runs from its own start, through the wakes of its class (a class's age restarts);
 * - the hold-time histogram counts every delivery, one that never waited at 0.
 */
describe('jobs that wait', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('waiting');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('are counted once, aged from their own start, and their waits land in the histogram', async () => {
    const queue = bed.queue('waiting');
    await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'call', data: { i } })));
    let done = 0;
    const worker = bed.worker('waiting', async () => { done++; }, { concurrency: 10, throttles: [Throttle.named('api').limit(2, '1m')] });
    const admin = new ThrottleAdmin({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => admin.close());
    const settled = async (delivered: number) => {
      await waitFor(async () => done === delivered && (await admin.queueStats('waiting')).heldByFullBuckets === 10 - delivered, 10_000, `${delivered} delivered, the rest held`);
      return admin.throttleStats('api');
    };
    // A job put back for starting late (a busy machine) goes back held, and waits again when its bucket is full:
    // it starts waiting once more.
    const expectLimited = (limited: number) => {
      expect(limited).toBeGreaterThanOrEqual(8);
      expect(limited).toBeLessThanOrEqual(8 + worker.startDeadline.putBack);
    };
    expectLimited((await settled(2)).limitedTotal);
    const waitingBy = Date.now();
    // Long enough that an age restarted by the class's wake below would show as younger than this.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await admin.setLimits('api', [{ max: 3, window: '1m' }]);
    expectLimited((await settled(3)).limitedTotal);
    await admin.setLimits('api', [{ max: 4, window: '1m' }]);
    const stats = await settled(4);
    const queueStats = await admin.queueStats('waiting');
    const readBy = Date.now();
    expectLimited(stats.limitedTotal);
    expect(stats.deliveredTotal).toBe(4);

    // The 6 left have waited since before waitingBy, whatever their class went through since.
    for (const oldest of [stats.oldestWaitingMs, queueStats.oldestHeldMs]) {
      expect(oldest).not.toBeNull();
      expect(oldest!).toBeGreaterThanOrEqual(stats.at - waitingBy - 5);
      expect(oldest!).toBeLessThanOrEqual(readBy - waitingBy + 10_000);
    }

    // 4 delivered: 2 at once (at 0), 2 after waiting 300 ms and more; a first one put back for starting late (a busy
    // machine: a CI run saw it) waited held before it went, and its wait counts as one.
    expect(stats.holdTimes.count).toBe(4);
    expect(stats.holdTimes.cumulative[0]).toBeGreaterThanOrEqual(2 - worker.startDeadline.putBack);
    expect(stats.holdTimes.cumulative[0]).toBeLessThanOrEqual(2);
    expect(stats.holdTimes.cumulative[stats.holdTimes.cumulative.length - 1]).toBe(4);
    expect(stats.holdTimes.sumMs).toBeGreaterThanOrEqual(600);

    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: admin });
    try {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE bullmq_throttle_hold_seconds histogram');
      expect(seriesValue(text, 'bullmq_throttle_hold_seconds_count{throttle="api"}')).toBe(4);
      expect(seriesValue(text, 'bullmq_throttle_hold_seconds_bucket{throttle="api",le="0.1"}')).toBe(2);
      expect(seriesValue(text, 'bullmq_throttle_hold_seconds_bucket{throttle="api",le="+Inf"}')).toBe(4);
      expect(seriesValue(text, 'bullmq_throttle_hold_seconds_sum{throttle="api"}')).toBeGreaterThanOrEqual(0.6);
      expect(seriesValue(text, 'bullmq_throttle_oldest_waiting_seconds{throttle="api"}')).toBeGreaterThanOrEqual((stats.at - waitingBy - 5) / 1000);
      expect(seriesValue(text, 'bullmq_throttle_queue_oldest_waiting_seconds{queue="waiting"}')).toBeGreaterThanOrEqual((stats.at - waitingBy - 5) / 1000);
    } finally {
      await metrics.close();
    }
  });

  it('a class woken by its bucket\'s room that finds another bucket taken waits once: the held figure stays the jobs held', async () => {
    // x's jobs count in 'per-customer' (1 per 1 s for x) and 'api' (2 per 1 h, shared with y). x2 (priority 5) waits
    // for x's room; while the worker is paused, y (priority 1) and x3 (priority 3) are added. When x's room returns,
    // the call that wakes x's class delivers y (api's last room), then finds x3, ahead of the class's head, short of
    // api: the class waits on api, and must not wait a second time as a class still ready (its two held jobs were
    // then counted twice in the held figure).
    const queue = bed.queue('woken');
    const done: string[] = [];
    const throttles = [Throttle.named('per-customer').key([Key.data('c')]).limit(1, '1s'), Throttle.named('api').limit(2, '1h')];
    const worker = bed.worker('woken', async (job) => { done.push(job.name); }, { concurrency: 5, throttles });
    const admin = new ThrottleAdmin({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => admin.close());
    const held = async () => (await admin.queueStats('woken')).heldByFullBuckets;
    await queue.add('x1', { c: 'x' });
    await waitFor(() => done.length === 1, 10_000, 'x1');
    const roomAt = performance.now() + 1_100;
    await queue.add('x2', { c: 'x' }, { priority: 5 });
    await waitFor(async () => (await held()) === 1, 10_000, 'x2 held');
    await worker.pause(true);
    await queue.add('y', { c: 'y' }, { priority: 1 });
    await queue.add('x3', { c: 'x' }, { priority: 3 });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, roomAt - performance.now())));
    worker.resume();
    await waitFor(() => done.length === 2, 10_000, 'y');
    expect(done).toEqual(['x1', 'y']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await held()).toBe(2);
  });
});
