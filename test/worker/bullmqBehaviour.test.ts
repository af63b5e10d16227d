import { Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Throttle } from '../../src';
import { newRedis } from '../support/redis';
import { selectAdapter } from '../../src/bullmq/selectAdapter';
import { redisNowMs, waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * bullmq's own behaviour, kept by ThrottledWorker with throttles that never bind: each case is one that
 * bullmq's test suite found different before (issue 10), and how a plain Worker behaves in it.
 */
describe('ThrottledWorker keeps bullmq behaviour', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  const roomy = () => [Throttle.named('roomy').limit(10_000, '1s')];
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('bullmq-behaviour');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('no fetch behind a refused completion: the stalled job completes on its next delivery and no other job is left in active', async () => {
    const queue = bed.queue('refused');
    const key = (suffix: string) => `${bed.prefix}:refused:${suffix}`;
    await queue.add('first', {}, { jobId: 'a' });
    const calls: string[] = [];
    let added = false;
    bed.worker('refused', async (job) => {
      calls.push(String(job.id));
      if (job.id === 'a' && !added) {
        added = true;
        // As bullmq's stalled check does with a job whose lock expired: the lock is gone and the job is
        // back in wait. Another job waits behind it, for a next fetch to take.
        await redis.multi().del(key('a:lock')).lrem(key('active'), 1, 'a').rpush(key('wait'), 'a').exec();
        await queue.add('second', {}, { jobId: 'b' });
      }
      return 'done';
    }, { concurrency: 1, throttles: roomy() });
    await waitFor(async () => (await queue.getJobState('a')) !== 'active' && (await queue.getCompletedCount()) === 2, 15_000, 'both jobs completed');
    expect(await queue.getJobState('a')).toBe('completed');
    expect(await queue.getJobState('b')).toBe('completed');
    expect(calls.filter((id) => id === 'a')).toHaveLength(2);
    expect(calls.filter((id) => id === 'b')).toHaveLength(1);
    expect(await redis.llen(key('active'))).toBe(0);
  });

  it("bullmq rate limit: the worker's limiter option holds throttled deliveries to its fixed window", async () => {
    const queue = bed.queue('limiter');
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'job', data: { i } })));
    const started: number[] = [];
    // bullmq's limiter counts deliveries (processedOn), so no start deadline here: a job put back for starting late
    // would take a place in the limiter's window unseen, and the window read from the first start would be off
    // (CI, every core busy: 3 in the 1 s after the first start seen).
    bed.worker('limiter', async (job: Job) => { started.push(job.processedOn!); }, {
      concurrency: 5, throttles: roomy(), limiter: { max: 2, duration: 1000 }, leaseMs: 0,
    });
    await waitFor(() => started.length >= 3, 15_000, 'a third delivery');
    started.sort((a, b) => a - b);
    // The window opens with the first delivery and holds 2 (bullmq's limiter is a fixed window from it).
    const inFirst = started.filter((t) => t < started[0] + 1000).length;
    expect(inFirst).toBe(2);
  });

  it('bullmq rate limit: queue.setGlobalRateLimit applies to every throttled worker of the queue', async () => {
    const queue = bed.queue('global');
    await queue.setGlobalRateLimit(1, 1000);
    await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'job', data: { i } })));
    const started: number[] = [];
    for (let w = 0; w < 2; w++) {
      bed.worker('global', async (job: Job) => { started.push(job.processedOn!); }, { concurrency: 4, throttles: roomy() });
    }
    await waitFor(() => started.length >= 2, 15_000, 'a second delivery');
    started.sort((a, b) => a - b);
    expect(started.filter((t) => t < started[0] + 1000)).toHaveLength(1);
  });

  it("bullmq rate limit: worker.rateLimit(ms) with Worker.RateLimitError holds back the queue's other workers too", async () => {
    const queue = bed.queue('manual');
    await queue.add('limits', {}, { jobId: 'trigger' });
    const started: { id: string; at: number }[] = [];
    let limitedAt = 0;
    const limiter = { max: 1000, duration: 1000 };
    const first: Worker = bed.worker('manual', async (job: Job) => {
      if (job.id === 'trigger' && limitedAt === 0) {
        await first.rateLimit(1500);
        limitedAt = await redisNowMs(redis);
        await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'after', data: { i } })));
        throw Worker.RateLimitError();
      }
      started.push({ id: String(job.id), at: job.processedOn! });
    }, { concurrency: 2, throttles: roomy(), limiter });
    await waitFor(() => limitedAt > 0, 10_000, 'the rate limit');
    bed.worker('manual', async (job: Job) => { started.push({ id: String(job.id), at: job.processedOn! }); }, { concurrency: 2, throttles: roomy(), limiter });
    await waitFor(() => started.length >= 5, 15_000, 'every job after the limit');
    for (const { at } of started) expect(at).toBeGreaterThanOrEqual(limitedAt + 1400);
    expect(started.map((s) => s.id)).toContain('trigger');
  });

  it('getNextJob blocks until a job can go, past the wake-ups of a throttle config', async () => {
    const queue = bed.queue('blocking');
    const worker = bed.worker('blocking', null, { throttles: roomy(), drainDelay: 3 });
    await worker.waitUntilReady();
    // bullmq's first call looks without blocking and finds the queue drained.
    expect(await worker.getNextJob('token-1')).toBeUndefined();
    const adding = new Promise<void>((resolve) => setTimeout(() => { void queue.add('late', {}).then(() => resolve()); }, 400));
    const job = await worker.getNextJob('token-1');
    await adding;
    expect(job?.name).toBe('late');
    await job!.moveToCompleted('ok', 'token-1', false);
  });

  it('getNextJob does not block while bullmq\'s rate limit holds the worker back, as bullmq\'s does not', async () => {
    const queue = bed.queue('limited-manual');
    await queue.add('first', {});
    const worker = bed.worker('limited-manual', null, { throttles: roomy(), limiter: { max: 1, duration: 10_000 }, drainDelay: 5 });
    await worker.waitUntilReady();
    const first = (await worker.getNextJob('token-l'))!;
    await first.moveToCompleted('ok', 'token-l', false);
    await queue.add('second', {});
    // The limiter is full: no job, and the worker now waits out the limit.
    expect(await worker.getNextJob('token-l')).toBeUndefined();
    let ticked = false;
    setTimeout(() => { ticked = true; }, 0);
    const started = Date.now();
    expect(await worker.getNextJob('token-l')).toBeUndefined();
    // It answered at once, without spinning on bullmq's immediate answer (timers still ran).
    expect(Date.now() - started).toBeLessThan(2_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(ticked).toBe(true);
  });

  it('moveToFailed and moveToCompleted with fetchNext answer [] when nothing is left to fetch, as bullmq does', async () => {
    const queue = bed.queue('answers');
    await queue.add('fails', {});
    await queue.add('completes', {});
    const worker = bed.worker('answers', null, { throttles: roomy() });
    await worker.waitUntilReady();
    const failing = await worker.getNextJob('token-f');
    const completing = await worker.getNextJob('token-c');
    expect([failing?.name, completing?.name].sort()).toEqual(['completes', 'fails']);
    const [toFail, toComplete] = failing!.name === 'fails' ? [failing!, completing!] : [completing!, failing!];
    const tokenOf = (job: Job) => (job === failing ? 'token-f' : 'token-c');
    expect(await toFail.moveToFailed(new Error('boom'), tokenOf(toFail), true)).toEqual([]);
    expect(await toComplete.moveToCompleted('ok', tokenOf(toComplete), true)).toEqual([]);
    expect(await queue.getJobCounts('failed', 'completed', 'active')).toEqual({ failed: 1, completed: 1, active: 0 });
  });

  it('moveToFailed with fetchNext of a job retried with backoff answers what bullmq answers ([] on bullmq 6) when nothing is left to fetch', async () => {
    const answer = async (name: string, worker: Worker) => {
      await bed.queue(name).add('fails', {}, { attempts: 3, backoff: 300 });
      await worker.waitUntilReady();
      const job = (await worker.getNextJob(`token-${name}`))!;
      const reply = await job.moveToFailed(new Error('boom'), `token-${name}`, true);
      expect(await job.isDelayed()).toBe(true);
      return reply;
    };
    const plain = new Worker('retry-plain', null, { connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => plain.close());
    const expected = await answer('retry-plain', plain);
    // bullmq 5 before 5.81 answers nothing at all here; bullmq 6 an empty next job.
    if (selectAdapter().line === 6) expect(expected).toEqual([]);
    expect(await answer('retry-throttled', bed.worker('retry-throttled', null, { throttles: roomy() }))).toEqual(expected);
  });

  it('a worker that autoruns is running (its lock manager too) once waitUntilReady() resolves', async () => {
    bed.queue('lock-manager');
    const worker = bed.worker('lock-manager', async () => undefined, { throttles: roomy() });
    await worker.waitUntilReady();
    expect(worker.isRunning()).toBe(true);
    expect((worker as unknown as { lockManager: { isRunning(): boolean } }).lockManager.isRunning()).toBe(true);
  });

  it("delayed jobs are promoted on the caller's clock, as bullmq promotes them (throttles keep the Redis clock)", async () => {
    const queue = bed.queue('clock');
    const realNow = Date.now;
    // This process's clock an hour behind Redis's: a job due in 30 minutes by it is not due yet.
    Date.now = () => realNow() - 3_600_000;
    try {
      await queue.add('later', {}, { delay: 1_800_000 });
      const worker = bed.worker('clock', null, { throttles: roomy() });
      await worker.waitUntilReady();
      expect(await worker.getNextJob('token-d', { block: false })).toBeUndefined();
      expect(await queue.getDelayedCount()).toBe(1);
    } finally {
      Date.now = realNow;
    }
  });
});
