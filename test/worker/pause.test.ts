import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Grantor, Key, RetryAfterError, Throttle, ThrottleAdmin } from '../../src';
import { pauseCommand, resumeCommand } from '../../src/cli/commands/pause';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

// Pauses (ThrottleAdmin.pause/resume, the CLI's pause/resume, RetryAfterError) on one Redis (exact delivery).
interface Start { at: number; customer: string; id: string; attemptsMade: number }

describe('pausing throttles and buckets', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let admin: ThrottleAdmin;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('pause');
    admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  });
  afterEach(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });

  const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(100, '1s');
  const redisNowMs = async () => { const [s, us] = await redis.time(); return Number(s) * 1000 + Math.floor(Number(us) / 1000); };

  function start(queueName: string, starts: Start[], processor?: (job: Job) => Promise<void>) {
    return bed.worker(queueName, async (job: Job) => {
      starts.push({ at: job.processedOn!, customer: job.data.customer, id: job.id!, attemptsMade: job.attemptsMade });
      await processor?.(job);
    }, { concurrency: 4, throttles: [perCustomer] });
  }

  it('a paused bucket delivers nothing until resumed, the others flow, and resume wakes it at once', async () => {
    const queue = bed.queue('one-key');
    const starts: Start[] = [];
    const worker = start('one-key', starts);
    await worker.waitUntilReady();
    expect(await admin.pause('api-per-customer', { key: ['acme'] })).toEqual({ until: null });
    await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    await waitFor(() => starts.filter((s) => s.customer === 'globex').length === 10, 10_000, 'globex delivered');
    // A second past that, acme is still held, and says so.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(starts.filter((s) => s.customer === 'acme')).toEqual([]);
    const bucket = await admin.throttleBucket('api-per-customer', ['acme']);
    expect(bucket.paused).toEqual({ until: null });
    expect(bucket.waiting).toBe(10);
    expect((await admin.throttleStats('api-per-customer')).paused).toEqual({ buckets: 1 });
    const resumedAt = await redisNowMs();
    expect(await admin.resume('api-per-customer', { key: ['acme'] })).toBe(1);
    await waitFor(() => starts.length === 20, 10_000, 'acme delivered after resume');
    expect(Math.min(...starts.filter((s) => s.customer === 'acme').map((s) => s.at))).toBeGreaterThanOrEqual(resumedAt);
    expect((await admin.throttleStats('api-per-customer')).paused).toBeNull();
  });

  it('a timed pause of the whole throttle holds every bucket until it ends, and survives a worker restart', async () => {
    const queue = bed.queue('whole');
    const starts: Start[] = [];
    const { until } = await admin.pause('api-per-customer', { forMs: 1_500 });
    expect(until).toBeGreaterThan(await redisNowMs());
    const first = start('whole', starts);
    await first.waitUntilReady();
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'call', data: { customer: `c${i % 3}` } })));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await first.close();
    const second = start('whole', starts);
    await second.waitUntilReady();
    await waitFor(() => starts.length === 6, 10_000, 'delivered once the pause ended');
    expect(Math.min(...starts.map((s) => s.at))).toBeGreaterThanOrEqual(until!);
  });

  it('RetryAfterError puts the job back held without an attempt and pauses its bucket for every worker', async () => {
    const queue = bed.queue('retry-after');
    const starts: Start[] = [];
    let thrown = false;
    let thrownAt = 0;
    // Slow jobs, so that acme's are still waiting when the first of them throws.
    const throwOnce = async (job: Job) => {
      if (job.data.customer === 'acme' && !thrown) {
        thrown = true;
        thrownAt = await redisNowMs();
        throw new RetryAfterError(1_200);
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    };
    start('retry-after', starts, throwOnce);
    start('retry-after', starts, throwOnce);
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    await waitFor(() => starts.length === 41, 15_000, 'every job delivered, one of them twice');
    const acme = starts.filter((s) => s.customer === 'acme').sort((a, b) => a.at - b.at);
    // Once the pause is set (a few ms after the throw), no acme job starts on either worker until it ends.
    expect(acme.filter((s) => s.at > thrownAt + 50 && s.at < thrownAt + 1_200 - 5)).toEqual([]);
    expect(acme.filter((s) => s.at >= thrownAt + 1_200 - 5).length).toBeGreaterThanOrEqual(2);
    expect(starts.filter((s) => s.customer === 'globex' && s.at > thrownAt + 50 && s.at < thrownAt + 1_200).length).toBeGreaterThan(0);
    const retried = acme.find((s, i) => acme.findIndex((t) => t.id === s.id) !== i)!;
    expect(retried.attemptsMade).toBe(0);
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 40, 10_000, 'every job completed');
    const job = await queue.getJob(retried.id);
    expect(await job!.getState()).toBe('completed');
    expect(job!.attemptsMade).toBe((await queue.getJob(starts.find((s) => s.customer === 'globex')!.id))!.attemptsMade);
  });

  it('a job sent back with RetryAfterError goes first again, ahead of the jobs held while it ran', async () => {
    const queue = bed.queue('retry-first');
    const order: string[] = [];
    // a, b and c fill the window; d, e and f are held for it while a runs and is turned away.
    bed.worker('retry-first', async (job: Job) => {
      order.push(job.name);
      if (job.name === 'a' && job.attemptsStarted === 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        throw new RetryAfterError(200);
      }
    // leaseMs 0: no start deadline, so a busy machine puts none of d, e, f back for starting late (which would let the
    // next of them start first); the order tested is RetryAfterError's.
    }, { concurrency: 6, leaseMs: 0, throttles: [Throttle.named('three').limit(3, '1s')] });
    await queue.addBulk(['a', 'b', 'c', 'd', 'e', 'f'].map((name) => ({ name, data: {} })));
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 6, 10_000, 'every job completed');
    expect(order.slice(0, 3).sort()).toEqual(['a', 'b', 'c']);
    // As bullmq places a job its processor rate-limited: first again when the window has room, so it comes in that
    // window with d and e, ahead of f (without the mark d, e and f would, and a after them). Processors of one
    // window start in any order (CI runs started e before d, and e before a).
    expect(order.slice(3, 6).sort()).toEqual(['a', 'd', 'e']);
    expect(order[6]).toBe('f');
  });

  it('a RetryAfterError from a sandboxed processor (a processor file) pauses and puts back as one thrown in process', async () => {
    const queue = bed.queue('sandboxed');
    // leaseMs 0: no start deadline. A sandboxed processor's first start waits for its child process, which on a
    // loaded machine (a rehearsal's bullmq 5.67.0 run) outlasts the deadline: the delivery then goes back and
    // comes again, one `active` more than the two this test counts for RetryAfterError.
    const worker = bed.worker('sandboxed', join(__dirname, '..', 'support', 'sandboxedRetryAfter.js'), { concurrency: 2, leaseMs: 0, throttles: [perCustomer] });
    const failed: string[] = [];
    const deliveredAt: number[] = [];
    worker.on('failed', (job) => failed.push(job?.id ?? '?'));
    worker.on('active', (job) => deliveredAt.push(job.processedOn!));
    const turnedAway = await queue.add('call', { customer: 'acme', turnedAway: true });
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, 10_000, 'the job completed on its second delivery');
    expect(failed).toEqual([]);
    const job = (await queue.getJob(turnedAway.id!))!;
    expect({ attemptsMade: job.attemptsMade, attemptsStarted: job.attemptsStarted }).toEqual({ attemptsMade: 1, attemptsStarted: 2 });
    // Its second delivery waited for the bucket's pause: 400 ms from the throw, which came after the first delivery.
    expect(deliveredAt).toHaveLength(2);
    expect(deliveredAt[1] - deliveredAt[0]).toBeGreaterThanOrEqual(400);
  });

  it('a RetryAfterError thrown in one worker process pauses the bucket in every other (real child processes)', async () => {
    const queue = bed.queue('retry-after-processes');
    const pauseMs = 1_500;
    const run = () => new Promise<{ at: number; customer: string; id: string; threw?: number }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'retryAfterWorkerProcess.ts')], {
        env: { ...process.env, RETRY_AFTER_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue: 'retry-after-processes', runMs: 4_500, pauseMs, flagKey: `${bed.prefix}:test-flag` }) },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    // Slow jobs (100 ms) on 3 processes of 3 slots: acme's are still waiting when its first, the trigger, throws.
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex', trigger: i === 1 } })));
    const all = (await Promise.all([run(), run(), run()])).flat();
    const thrownAt = all.find((s) => s.threw !== undefined)!.threw!;
    const acmeStarts = all.filter((s) => s.customer === 'acme');
    // Every acme start after the pause was set (a few ms after the throw) waited until it ended, in every process.
    expect(acmeStarts.filter((s) => s.at > thrownAt + 50 && s.at < thrownAt + pauseMs - 5)).toEqual([]);
    expect(acmeStarts.filter((s) => s.at >= thrownAt + pauseMs - 5).length).toBeGreaterThan(0);
    expect(all.filter((s) => s.customer === 'globex' && s.at > thrownAt + 50 && s.at < thrownAt + pauseMs).length).toBeGreaterThan(0);
    // The job that threw went back and was delivered again, once.
    expect(acmeStarts.filter((s) => s.id === all.find((t) => t.threw !== undefined)!.id)).toHaveLength(2);
  });

  it('Grantor grants nothing from a paused bucket, and the CLI pauses and resumes', async () => {
    const grantor = new Grantor({ connection: testRedisUrl(), prefix: bed.prefix });
    bed.onClose(() => grantor.close());
    // A throttle only the Grantor API uses is declared by no live worker: the CLI refuses it (a typo would pause
    // nothing), and --force pauses it (nothing says its key's shape).
    await expect(pauseCommand(admin, 'api-per-customer', ['acme'], { for: '10s' })).rejects.toThrow(/is not declared by any live ThrottledWorker.*add --force/);
    expect(await pauseCommand(admin, 'api-per-customer', ['acme'], { for: '10s', force: true })).toMatch(/^bucket .*acme.* of throttle api-per-customer paused for 10s, until /);
    const [acme, globex] = await grantor.grant([[{ throttle: perCustomer, key: ['acme'] }], [{ throttle: perCustomer, key: ['globex'] }]]);
    expect(acme.granted).toBe(false);
    expect(globex.granted).toBe(true);
    expect(await resumeCommand(admin, 'api-per-customer', null)).toBe('throttle api-per-customer: 1 pause lifted');
    expect((await grantor.grant([[{ throttle: perCustomer, key: ['acme'] }]]))[0].granted).toBe(true);
  });
});
