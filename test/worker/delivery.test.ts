import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { getThrottledCount, Key, Missing, mostInAnyWindow, Throttle, ThrottleAdmin, ThrottleKeys } from '../../src';
import { ScriptRunner } from '../../src/lua/scripts';
import { runPublishLimits } from '../../src/lua/calls/publishLimits';
import { PublishQueueConfigReply, runPublishQueueConfig } from '../../src/lua/calls/publishQueueConfig';
import { declarationData } from '../../src/worker/declarations/declarationRegistry';
import { queueConfigFrom } from '../../src/queueState/queueConfig';
import { newRedis, storedTokens } from '../support/redis';
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
    const worker = bed.worker('orders', async (job) => { seen.push(job); }, { concurrency: 8, throttles: [perCustomer] });
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
    // Paused, nothing moves between the two reads (bullmq's counts, then the held ones): a job delivered between
    // them would be in neither (CI, every core busy: 55 of 56).
    await worker.pause();
    const counts = await queue.getJobCounts();
    const held = await getThrottledCount(queue);
    const total = Object.values(counts).reduce((a, b) => a + b, 0) + held.throttled;
    expect(total).toBe(jobs.length);
  });

  it('holds the same limits whether the delivery script classifies a job or leaves it to the worker', async () => {
    const queue = bed.queue('mixed');
    // 'acme' and 7 are classified inside the delivery script; 'ünï', 1.5 and an object go through the
    // worker's classifier. 7 and '7' are different buckets; 1.5 has its own.
    const customers: unknown[] = ['acme', 'ünï', 7, '7', 1.5, { id: 1 }];
    const jobs = Array.from({ length: 48 }, (_, i) => ({ name: 'charge', data: { customer: customers[i % customers.length], i } }));
    await queue.addBulk(jobs);
    const seen: Job[] = [];
    const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(3, 400);
    bed.worker('mixed', async (job) => { seen.push(job); }, { concurrency: 6, throttles: [perCustomer] });
    await waitFor(() => seen.length === jobs.length, 20_000, 'every job delivered');
    expect(new Set(seen.map((j) => j.id)).size).toBe(jobs.length);
    const bucketOf = (job: Job) => {
      const value = job.data?.customer;
      // An object counts as missing the key: such jobs share the missing-key bucket.
      return typeof value === 'object' || value === undefined ? 'missing' : `${typeof value}:${String(value)}`;
    };
    const buckets = new Set(seen.map(bucketOf));
    expect([...buckets].sort()).toEqual(['missing', 'number:1.5', 'number:7', 'string:7', 'string:acme', 'string:ünï']);
    for (const bucket of buckets) {
      expect(mostInAnyWindow(seen.filter((j) => bucketOf(j) === bucket).map((j) => j.processedOn!), 400)).toBeLessThanOrEqual(3);
    }
    expect((await getThrottledCount(queue)).throttled).toBe(0);
  });

  it("while a bucket waits for room, a job of another bucket still goes at once, and close() does not wait for the room", async () => {
    const queue = bed.queue('parked');
    const seen: Job[] = [];
    const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(1, 900);
    const worker = bed.worker('parked', async (job) => { seen.push(job); }, { concurrency: 4, throttles: [perCustomer] });
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'charge', data: { customer: 'a', i } })));
    await waitFor(() => seen.length === 1, 10_000, "a's first job");
    // a's room returns 900 ms after its first delivery: the worker's slots have nothing to take until then.
    await new Promise((r) => setTimeout(r, 100));
    await queue.add('charge', { customer: 'b' });
    await waitFor(() => seen.length >= 3, 10_000, "b's job and a's second");
    const b = seen.find((j) => j.data.customer === 'b')!;
    const secondA = seen.filter((j) => j.data.customer === 'a')[1];
    expect(b).toBeDefined();
    expect(b.processedOn!).toBeLessThan(seen[0].processedOn! + 900);
    expect(secondA.processedOn! - seen[0].processedOn!).toBeGreaterThanOrEqual(900);
    // a's third job waits another 900 ms; closing does not.
    const closing = worker.close();
    await closing;
    expect(seen.filter((j) => j.data.customer === 'a')).toHaveLength(2);
  });

  it('a published config that leaves out a throttle this worker declares never lets a job skip it', async () => {
    const queue = bed.queue('stale');
    const seen: Job[] = [];
    const worker = bed.worker('stale', async (job) => { seen.push(job); }, { concurrency: 4, autorun: false, throttles: [Throttle.named('mine').limit(1000, '1m')] });
    await worker.waitUntilReady();
    // A config without this worker's throttle (what an older version, or one whose registry was lost, might
    // publish; publishQueueConfig refuses one from an older registry view, so it is forced here).
    const older = queueConfigFrom([{ workerId: 'other', queue: 'stale', prefix: bed.prefix, declarations: [declarationData(Throttle.named('theirs').limit(1000, '1m'))], attributes: false }], 'stale', bed.prefix);
    const keys = new ThrottleKeys(bed.prefix);
    const q = keys.queue('stale');
    await runPublishQueueConfig(new ScriptRunner(redis), {
      state: q.state, marker: `${bed.prefix}:stale:marker`, workers: q.workers, gen: older.gen, configJson: '[]', luaSpec: older.luaSpec,
      registryVersion: 0, force: true, workerId: 'other', workerTtlMs: 45_000, maxWaits: '', fairness: false, throttles: [{ stats: q.throttleStats('theirs').stats, longestMs: 60_000 }],
    });
    await runPublishLimits(new ScriptRunner(redis), {
      ttlMs: 45_000, registryVersion: 0, force: true, throttles: [{ limitsKey: keys.effectiveLimits('theirs'), limits: [{ kind: 'window', windowMs: 60_000, max: 1000 }], rateLeaseMs: 0 }],
    });
    await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'job', data: { i } })));
    void worker.run();
    await waitFor(() => seen.length === 10, 15_000, 'every job delivered');
    const admin = new ThrottleAdmin({ connection: redis, prefix: bed.prefix });
    try {
      expect((await admin.throttleBucket('mine', null)).limits[0].counted).toBe(10);
    } finally {
      await admin.close();
    }
  });

  it('a config worked out from an older registry view is refused', async () => {
    const worker = bed.worker('views', null, { throttles: [Throttle.named('mine').limit(5, '1s')] });
    await worker.waitUntilReady();
    const keys = new ThrottleKeys(bed.prefix);
    const state = keys.queue('views').state;
    const [gen, regv] = await redis.hmget(state, 'gen', 'regv');
    expect(Number(regv)).toBeGreaterThan(0);
    const older = queueConfigFrom([], 'views', bed.prefix);
    const q = keys.queue('views');
    const publish = (version: number) => runPublishQueueConfig(new ScriptRunner(redis), {
      state, marker: `${bed.prefix}:views:marker`, workers: q.workers, gen: 'other-gen', configJson: '[]', luaSpec: older.luaSpec,
      registryVersion: version, force: false, workerId: 'other', workerTtlMs: 45_000, maxWaits: '', fairness: false, throttles: [],
    });
    expect(await publish(Number(regv) - 1)).toBe(PublishQueueConfigReply.Refused);
    expect(await redis.hget(state, 'gen')).toBe(gen);
    // Limits from an older view stay as they are too (they are shared with other queues).
    const limits = keys.effectiveLimits('mine');
    const published = await runPublishLimits(new ScriptRunner(redis), {
      ttlMs: 45_000, registryVersion: Number(regv) - 1, force: false, throttles: [{ limitsKey: limits, limits: [{ kind: 'window', windowMs: 1000, max: 50 }], rateLeaseMs: 0 }],
    });
    expect(published).toBe(0);
    expect(await redis.hget(limits, '1000')).toBe('5');
    expect(await publish(Number(regv))).toBe(PublishQueueConfigReply.Changed);
    expect(await redis.hget(state, 'gen')).toBe('other-gen');
  });

  it('holds jobs that cannot go without a lock, an attempt or an active event', async () => {
    const queue = bed.queue('held');
    const added = await queue.addBulk([1, 2, 3].map((i) => ({ name: 'n', data: { i } })));
    const processed: string[] = [];
    const worker = bed.worker('held', async (job) => { processed.push(job.id!); }, { throttles: [Throttle.named('slow').limit(1, '1m')] });
    await waitFor(() => processed.length === 1, 10_000, 'one delivery');
    await new Promise((r) => setTimeout(r, 300));
    expect(processed).toEqual([added[0].id]);
    const events = await redis.xrange(`${bed.prefix}:held:events`, '-', '+');
    const activeIds = events.filter(([, fields]) => fields[1] === 'active').map(([, fields]) => fields[3]);
    // Only the job that went; once more for each time it was put back for starting late (a loaded machine's
    // first start may miss its deadline: it is delivered again, its token given back, as bullmq moves it anew).
    expect(activeIds).toEqual(Array.from({ length: 1 + worker.startDeadline.putBack }, () => added[0].id));
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

describe('ThrottledWorker keeps bullmq whole', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('whole');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  const accountFor = async (queue: import('bullmq').Queue) => {
    const counts = await queue.getJobCounts();
    return Object.values(counts).reduce((a, b) => a + b, 0) + (await getThrottledCount(queue)).throttled;
  };

  it('job.remove() of a held job: it is never delivered and stops counting', async () => {
    const queue = bed.queue('remove');
    const added = await queue.addBulk([1, 2, 3].map((i) => ({ name: 'n', data: { i } })));
    const processed: string[] = [];
    bed.worker('remove', async (job) => { processed.push(job.id!); }, { throttles: [Throttle.named('one-per-600ms').limit(1, 600)] });
    await waitFor(() => processed.length === 1, 10_000, 'the first delivery');
    const victim = await queue.getJob(added[1].id!);
    await victim!.remove();
    expect(await accountFor(queue)).toBe(2);
    await waitFor(() => processed.length === 2, 10_000, 'the next delivery');
    await new Promise((r) => setTimeout(r, 900));
    expect(processed).toEqual([added[0].id, added[2].id]);
    expect(await accountFor(queue)).toBe(2);
  });

  it('retries with backoff are new deliveries and count; failures and completions go through as usual', async () => {
    const queue = bed.queue('retries');
    await queue.add('flaky', {}, { attempts: 3, backoff: { type: 'fixed', delay: 50 } });
    await queue.add('fine', {});
    const starts: { name: string; processedOn: number; attempt: number }[] = [];
    const worker = bed.worker('retries', async (job) => {
      starts.push({ name: job.name, processedOn: job.processedOn!, attempt: job.attemptsMade });
      if (job.name === 'flaky') throw new Error('try again');
    }, { concurrency: 2, throttles: [Throttle.named('spaced').limit(1, 300)] });
    const failed: string[] = [];
    worker.on('failed', (job) => { if (job && job.attemptsMade >= 3) failed.push(job.name); });
    await waitFor(() => failed.length === 1 && starts.length === 4, 15_000, 'three attempts and one success');
    const times = starts.map((s) => s.processedOn).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(300);
    expect(starts.filter((s) => s.name === 'flaky').map((s) => s.attempt)).toEqual([0, 1, 2]);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 1 });
  });

  it('delayed jobs wait their delay, then their turn', async () => {
    const queue = bed.queue('delayed');
    const worker = bed.worker('delayed', async (job) => { seen.push({ name: job.name, at: job.processedOn! }); }, { throttles: [Throttle.named('roomy').limit(100, '1s')] });
    const seen: { name: string; at: number }[] = [];
    await worker.waitUntilReady();
    const addedAt = Date.now();
    await queue.add('later', {}, { delay: 400 });
    await queue.add('now', {});
    await waitFor(() => seen.length === 2, 10_000, 'both jobs');
    expect(seen.map((s) => s.name)).toEqual(['now', 'later']);
    expect(seen[1].at - addedAt).toBeGreaterThanOrEqual(390);
  });

  it('pause and resume, and global concurrency, hold as in bullmq', async () => {
    const queue = bed.queue('pause');
    const worker = bed.worker('pause', async () => { running++; maxRunning = Math.max(maxRunning, running); await new Promise((r) => setTimeout(r, 30)); running--; done++; }, {
      concurrency: 5, throttles: [Throttle.named('roomy2').limit(1000, '1s')],
    });
    let running = 0;
    let maxRunning = 0;
    let done = 0;
    await worker.waitUntilReady();
    await queue.pause();
    await queue.addBulk(Array.from({ length: 10 }, () => ({ name: 'n', data: {} })));
    await new Promise((r) => setTimeout(r, 400));
    expect(done).toBe(0);
    await queue.setGlobalConcurrency(2);
    await queue.resume();
    await waitFor(() => done === 10, 10_000, 'all ten after resume');
    expect(maxRunning).toBeLessThanOrEqual(2);
  });

  it("a slot waiting for room keeps neither its job's completed or failed event nor pause() waiting", async () => {
    const queue = bed.queue('events');
    await queue.add('bad', {});
    await queue.add('good', {});
    await queue.add('last', {});
    const processedOn = new Map<string, number>();
    const worker = bed.worker('events', async (job) => {
      processedOn.set(job.name, job.processedOn!);
      if (job.name === 'bad') throw new Error('no');
    }, { concurrency: 3, throttles: [Throttle.named('one-per-800ms').limit(1, 800)] });
    const reportedAt = new Map<string, number>();
    worker.on('failed', (job) => { reportedAt.set(job!.name, Date.now()); });
    worker.on('completed', (job) => { reportedAt.set(job.name, Date.now()); });
    await waitFor(() => reportedAt.has('good'), 10_000, "'good' completed");
    // The slot that ran 'bad' asked for its next job at once and waited for room: 'good' went 800 ms
    // later, yet bad's failure was reported when it happened, not when that wait ended.
    expect(reportedAt.get('bad')!).toBeLessThan(processedOn.get('good')!);
    // good's slot now waits for room for 'last': pausing lets it go rather than wait for the room.
    await worker.pause();
    expect(processedOn.has('last')).toBe(false);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(processedOn.has('last')).toBe(false);
    worker.resume();
    await waitFor(() => processedOn.has('last'), 10_000, "'last' after resume");
    expect(processedOn.get('last')! - processedOn.get('good')!).toBeGreaterThanOrEqual(800);
  });

  it('resume looks for held jobs at once, even with nothing on bullmq\'s marker', async () => {
    const queue = bed.queue('resume');
    await queue.addBulk([{ name: 'first', data: {} }, { name: 'second', data: {} }]);
    const processedOn = new Map<string, number>();
    const worker = bed.worker('resume', async (job) => { processedOn.set(job.name, job.processedOn!); }, {
      concurrency: 1, throttles: [Throttle.named('one-per-500ms').limit(1, 500)],
    });
    await waitFor(() => processedOn.has('first'), 10_000, "'first'");
    // 'second' is held for room; bullmq's main loop waits on the marker when the worker pauses.
    await new Promise((r) => setTimeout(r, 100));
    await worker.pause();
    await new Promise((r) => setTimeout(r, 800));
    expect(processedOn.has('second')).toBe(false);
    // Whatever set the marker meanwhile (the gate's wake for the room's return) is gone: bullmq alone would
    // block on it for its longest wait (10 s) after resume.
    await redis.del(`${bed.prefix}:resume:marker`);
    worker.resume();
    await waitFor(() => processedOn.has('second'), 3_000, "'second' after resume");
  });

  it("'drained' fires when the queue runs dry, not while its backlog flows", async () => {
    const queue = bed.queue('drained');
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'n', data: { i } })));
    let completed = 0;
    const drainedAt: number[] = [];
    const worker = bed.worker('drained', async () => undefined, { concurrency: 5, throttles: [Throttle.named('roomy-drained').limit(1000, '1s')] });
    worker.on('completed', () => { completed++; });
    worker.on('drained', () => { drainedAt.push(completed); });
    await waitFor(() => completed === 30 && drainedAt.length > 0, 10_000, 'all 30 and drained');
    // Only a slot whose fetch finds no job drains: at most the last slots' worth before the end.
    expect(Math.min(...drainedAt)).toBeGreaterThanOrEqual(30 - 5);
  });

  it("completes jobs in batches exactly as bullmq does: return values, finishedOn, removeOnComplete, events", async () => {
    const { QueueEvents } = await import('bullmq');
    const queue = bed.queue('batched');
    const events = new QueueEvents('batched', { connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => events.close());
    await events.waitUntilReady();
    const returned = new Map<string, unknown>();
    events.on('completed', ({ jobId, returnvalue }) => { returned.set(jobId, returnvalue); });
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'n', data: { i }, opts: { removeOnComplete: { count: 10 } } })));
    const local: { id: string; finishedOn?: number; attemptsMade: number; returnvalue: unknown }[] = [];
    const worker = bed.worker('batched', async (job) => ({ doubled: job.data.i * 2 }), { concurrency: 20, throttles: [Throttle.named('roomy-batched').limit(1000, '1s')] });
    worker.on('completed', (job) => { local.push({ id: job.id!, finishedOn: job.finishedOn, attemptsMade: job.attemptsMade, returnvalue: job.returnvalue }); });
    await waitFor(() => local.length === 40 && returned.size === 40, 10_000, '40 completions, seen locally and by QueueEvents');
    for (const job of local) {
      expect(job.finishedOn).toEqual(expect.any(Number));
      expect(job.attemptsMade).toBe(1);
    }
    const kept = await queue.getJobs(['completed']);
    expect(kept).toHaveLength(10);
    for (const job of kept) {
      expect(job.returnvalue).toEqual({ doubled: job.data.i * 2 });
      expect(job.finishedOn).toBeGreaterThanOrEqual(job.processedOn!);
      expect(returned.get(job.id!)).toEqual({ doubled: job.data.i * 2 });
    }
    expect(await queue.getJobCounts('active', 'wait', 'completed')).toEqual({ active: 0, wait: 0, completed: 10 });
  });

  it("a job whose completion fails inside bullmq's Lua leaves the jobs completed with it unharmed", async () => {
    const queue = bed.queue('oneBad');
    const jobs = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: i === 6 ? 'bad' : 'good', data: { i } })));
    let started = 0;
    let release!: () => void;
    const barrier = new Promise<void>((resolve) => { release = resolve; });
    const completed: string[] = [];
    const worker = bed.worker('oneBad', async (job) => {
      if (++started === 10) release();
      await barrier;
      if (job.name === 'bad') {
        // bullmq's moveToFinished decodes 'parent' as JSON: this job's completion raises a Lua error. It
        // completes last, behind the others of its batch, whose completions the failing call has written.
        await redis.hset(`${bed.prefix}:oneBad:${job.id}`, 'parent', 'not json');
        await new Promise((resolve) => setImmediate(resolve));
      }
    }, { concurrency: 10, throttles: [Throttle.named('roomy-bad').limit(1000, '1s')] });
    worker.on('completed', (job) => { completed.push(job.id!); });
    worker.on('error', () => undefined);
    await waitFor(() => completed.length === 9, 10_000, 'the nine good jobs completed');
    expect(completed.sort()).toEqual(jobs.filter((j) => j.name === 'good').map((j) => j.id!).sort());
  });

  it('manual processing: getNextJob and moveToCompleted(…, fetchNext) are gated too', async () => {
    const queue = bed.queue('manual');
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'n', data: { i } })));
    const worker = bed.worker('manual', null, { throttles: [Throttle.named('manual-two').limit(2, '10s')] });
    await worker.waitUntilReady();
    const token = 'manual-token';
    const first = await worker.getNextJob(token);
    expect(first?.data).toEqual({ i: 1 });
    const [nextData, nextId] = (await first!.moveToCompleted('one', token, true)) as [{ data: string }, string];
    expect(JSON.parse(nextData.data)).toEqual({ i: 2 });
    // As bullmq's guide does it: the next job, built on the worker (so that it completes through it).
    const { Job } = await import('bullmq');
    const second = Job.fromJSON(worker as never, nextData as never, nextId);
    // The limit is spent: this completion fetches no job, only when to look again (as bullmq's rate limit does).
    const [noJob, , , lookAgainAt] = (await second.moveToCompleted('two', token, true)) as unknown[];
    expect(noJob).toBeFalsy();
    expect(lookAgainAt).toBeGreaterThan(Date.now() + 5_000);
    expect(await queue.getJobCounts('completed', 'active')).toEqual({ completed: 2, active: 0 });
    expect((await getThrottledCount(queue)).throttled + (await queue.getWaitingCount())).toBe(1);
  });

  it('QueueEvents sees active and completed; flows complete children before parents', async () => {
    const { QueueEvents, FlowProducer } = await import('bullmq');
    const queue = bed.queue('flows');
    const events = new QueueEvents('flows', { connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => events.close());
    await events.waitUntilReady();
    const active: string[] = [];
    const completed: string[] = [];
    events.on('active', ({ jobId }) => active.push(jobId));
    events.on('completed', ({ jobId }) => completed.push(jobId));
    const order: string[] = [];
    const worker = bed.worker('flows', async (job) => { order.push(job.name); }, { concurrency: 3, throttles: [Throttle.named('flowy').limit(2, 200)] });
    const flow = new FlowProducer({ connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => flow.close());
    await flow.add({ name: 'parent', queueName: 'flows', children: [1, 2, 3].map((i) => ({ name: `child-${i}`, queueName: 'flows', data: {} })) });
    await waitFor(() => order.length === 4, 10_000, 'the whole flow');
    expect(order[3]).toBe('parent');
    await waitFor(() => completed.length === 4, 5_000, 'completed events');
    // A job put back for starting late (a busy machine) was active once before it went back held.
    expect(active).toHaveLength(4 + worker.startDeadline.putBack);
    expect(new Set(active).size).toBe(4);
    expect(await accountFor(queue)).toBe(4);
  });

  it('re-delivers a stalled job, counting it as another delivery', async () => {
    const queue = bed.queue('stalled');
    await queue.add('stuck', {});
    const starts: number[] = [];
    // The first worker takes the job and never finishes it, nor renews its lock.
    const first = bed.worker('stalled', async (job) => { starts.push(job.processedOn!); await new Promise(() => undefined); }, {
      throttles: [Throttle.named('stall').limit(5, '1m')], lockDuration: 500, skipLockRenewal: true, stalledInterval: 300,
    });
    await waitFor(() => starts.length === 1, 10_000, 'the first delivery');
    await first.close(true);
    const second = bed.worker('stalled', async (job) => { starts.push(job.processedOn!); }, {
      throttles: [Throttle.named('stall').limit(5, '1m')], lockDuration: 500, stalledInterval: 300,
    });
    await waitFor(() => starts.length === 2, 15_000, 'the re-delivery');
    const counter = await storedTokens(redis, new ThrottleKeys(bed.prefix).windowCounter('stall', '-', 60_000));
    expect(counter).toBe('2');
    await second.close();
  });

  it('a removed held job is counted out once, even when its class is reclassified', async () => {
    const queue = bed.queue('rs');
    const first = bed.worker('rs', async () => undefined, { throttles: [Throttle.named('one-a-minute').limit(1, '1m')], attributes: () => ({}) });
    const added = await queue.addBulk([1, 2, 3, 4].map((i) => ({ name: 'n', data: { i } })));
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, 10_000, 'one delivery');
    await waitFor(async () => (await getThrottledCount(queue)).held === 3, 10_000, 'three held');
    await (await queue.getJob(added[2].id!))!.remove();
    expect((await getThrottledCount(queue)).held).toBe(2);
    // A new throttle set: every held class goes stale and is classified again.
    const second = bed.worker('rs', async () => undefined, { throttles: [Throttle.named('another').limit(1, '1m')], attributes: () => ({}) });
    await second.waitUntilReady();
    await first.close();
    const rs = new ThrottleKeys(bed.prefix).queue('rs');
    const reclassified = async () => {
      const gen = await redis.hget(rs.state, 'gen');
      const classes = await redis.smembers(rs.classes);
      return classes.length > 0 && classes.every((member) => member.startsWith(`${gen}/`)) && (await redis.zcard(rs.intake)) === 0;
    };
    await waitFor(reclassified, 15_000, 'reclassification under the new throttle');
    const counts = await queue.getJobCounts();
    const held = await getThrottledCount(queue);
    expect(Object.values(counts).reduce((a, b) => a + b, 0) + held.throttled).toBe(3);
    expect(await redis.scard(rs.removedHeld)).toBe(0);
  });
});
