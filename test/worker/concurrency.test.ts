import { DelayedError, Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleAdmin } from '../../src';
import { testRedisUrl } from '../support/testRedis';
import { watchCommand } from '../../src/cli/commands/watch';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { mostAtOnce } from '../support/inFlight';

// Throttle.concurrency(n): at most n jobs of a bucket in flight, from delivery to the end of the job.
describe('concurrency', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('inflight');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('at most n per key in flight across two workers on two queues, and each key reaches n', async () => {
    const perDomain = Throttle.named('scraper').key([Key.data('domain')]).concurrency(3);
    const ended: { domain: string; from: number; to: number }[] = [];
    const processor = async (job: Job) => {
      await sleep(10 + Math.floor(Math.random() * 60));
      ended.push({ domain: job.data.domain, from: job.processedOn!, to: Date.now() });
    };
    const queues = [bed.queue('pages-a'), bed.queue('pages-b')];
    bed.worker('pages-a', processor, { concurrency: 8, throttles: [perDomain] });
    bed.worker('pages-b', processor, { concurrency: 8, throttles: [perDomain] });
    const domains = ['a.example', 'b.example', 'c.example', 'd.example'];
    for (const queue of queues) await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'page', data: { domain: domains[i % domains.length] } })));
    // A processor's end comes before bullmq writes the completion: wait for the completions themselves.
    await waitFor(async () => ended.length === 240 && (await Promise.all(queues.map((q) => q.getCompletedCount()))).every((n) => n === 120), 60_000, 'every job completed');
    const jobs = (await Promise.all(queues.map((q) => q.getJobs(['completed'], 0, -1)))).flat();
    expect(jobs).toHaveLength(240);
    for (const domain of domains) {
      // As the issue counts them: from processedOn (Redis) to finishedOn (bullmq's completion).
      const spans = jobs.filter((j) => j.data.domain === domain).map((j) => ({ from: j.processedOn!, to: j.finishedOn! }));
      expect(mostAtOnce(spans)).toBeLessThanOrEqual(3);
      // And as the processors saw them, which is inside that.
      expect(mostAtOnce(ended.filter((e) => e.domain === domain))).toBeLessThanOrEqual(3);
      expect(mostAtOnce(spans)).toBe(3);
    }
  });

  it('failures, retries and moves to delayed free their slot at once; a waiting retry holds nothing', async () => {
    const single = Throttle.named('one-at-a-time').concurrency(1);
    const queue = bed.queue('flaky');
    const spans: { from: number; to: number }[] = [];
    let running = 0;
    let most = 0;
    bed.worker('flaky', async (job: Job, token?: string) => {
      running++;
      most = Math.max(most, running);
      try {
        await sleep(20);
        if (job.data.kind === 'fails' && job.attemptsMade < 2) throw new Error('try again');
        if (job.data.kind === 'delays' && !job.data.delayed) {
          await job.updateData({ ...job.data, delayed: true });
          await job.moveToDelayed(Date.now() + 300, token);
          throw new DelayedError();
        }
      } finally {
        running--;
        spans.push({ from: job.processedOn!, to: Date.now() });
      }
    }, { concurrency: 5, throttles: [single] });
    await queue.addBulk([
      ...Array.from({ length: 6 }, () => ({ name: 'fails', data: { kind: 'fails' }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 200 } } })),
      ...Array.from({ length: 4 }, () => ({ name: 'delays', data: { kind: 'delays' } })),
      ...Array.from({ length: 10 }, () => ({ name: 'plain', data: { kind: 'plain' } })),
    ]);
    await waitFor(async () => (await queue.getCompletedCount()) === 20, 30_000, 'every job completed');
    expect(most).toBe(1);
    expect(mostAtOnce(spans)).toBe(1);
    // 6 x 3 attempts + 4 x 2 runs + 10: every end gave its slot back (a slot lost to a failure would stall the rest).
    expect(spans).toHaveLength(36);
  });

  it('a job running far past its lock duration (the lock renewed) keeps its slot: the next waits for its end', async () => {
    const single = Throttle.named('long-runner').concurrency(1);
    const queue = bed.queue('long');
    const spans: { from: number; to: number }[] = [];
    bed.worker('long', async (job: Job) => {
      await sleep(job.data.ms);
      spans.push({ from: job.processedOn!, to: Date.now() });
    }, { concurrency: 4, lockDuration: 500, throttles: [single] });
    await queue.addBulk([{ name: 'long', data: { ms: 2_600 } }, { name: 'short', data: { ms: 10 } }, { name: 'short', data: { ms: 10 } }]);
    await waitFor(() => spans.length === 3, 20_000, 'every job processed');
    // The full bucket's check (once a second) found the long job's lock each time.
    expect(mostAtOnce(spans)).toBe(1);
  });

  it('combines with a window limit: a delivery needs room in both', async () => {
    const stripe = Throttle.named('stripe').limit(10, '1s').concurrency(2);
    const queue = bed.queue('payments');
    const spans: { from: number; to: number }[] = [];
    bed.worker('payments', async (job: Job) => {
      await sleep(30);
      spans.push({ from: job.processedOn!, to: Date.now() });
    }, { concurrency: 10, throttles: [stripe] });
    await queue.addBulk(Array.from({ length: 25 }, () => ({ name: 'charge', data: {} })));
    await waitFor(() => spans.length === 25, 30_000, 'every job processed');
    expect(mostAtOnce(spans)).toBe(2);
    const starts = spans.map((s) => s.from).sort((a, b) => a - b);
    for (let i = 10; i < starts.length; i++) expect(starts[i] - starts[i - 10]).toBeGreaterThanOrEqual(1000);
  });

  it('stats: the bucket counts its jobs in flight, binds on concurrency when full, and the effective rate divides n by the measured processing time', async () => {
    const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    try {
      const perDomain = Throttle.named('fetch').key([Key.data('domain')]).concurrency(2);
      const queue = bed.queue('fetch');
      const ran: string[] = [];
      bed.worker('fetch', async (job: Job) => {
        ran.push(job.data.domain);
        if (job.data.hold) await gate; else await sleep(50);
      }, { concurrency: 6, throttles: [perDomain] });
      // Some run first so that a processing time is measured, then two hold the bucket of a.example.
      await queue.addBulk(Array.from({ length: 6 }, () => ({ name: 'get', data: { domain: 'warm.example' } })));
      await waitFor(() => ran.length === 6, 10_000, 'the warm-up jobs ran');
      await sleep(200);
      await queue.addBulk(Array.from({ length: 5 }, () => ({ name: 'get', data: { domain: 'a.example', hold: true } })));
      await waitFor(() => ran.filter((d) => d === 'a.example').length === 2, 10_000, 'two a.example jobs in flight');
      await sleep(200);
      const bucket = await admin.throttleBucket('fetch', ['a.example']);
      expect(bucket).toMatchObject({ inFlight: { max: 2, counted: 2 }, bindingNow: 'concurrency 2', waiting: 3 });
      const free = await admin.throttleBucket('fetch', ['b.example']);
      expect(free).toMatchObject({ inFlight: { max: 2, counted: 0 }, bindingNow: null });
      // The dispatch delay is published with the worker's heartbeat: wait for one.
      await waitFor(async () => (await admin.throttleStats('fetch')).dispatchDelay?.processingMs != null, 20_000, 'a processing time published');
      const stats = await admin.throttleStats('fetch');
      expect(stats.concurrency).toBe(2);
      expect(stats.effective!.binding).toBe('concurrency 2');
      expect(stats.effective!.processingMs).toBeGreaterThanOrEqual(40);
      expect(stats.effective!.perSecond).toBeCloseTo(2000 / stats.effective!.processingMs!, 6);
      // watch shows the busiest bucket against its concurrency, and what holds it.
      const frame = await watchCommand(admin, 'fetch');
      expect(frame).toMatch(/^fetch · concurrency 2 per bucket · .* · 3 jobs waiting$/m);
      expect(frame).toMatch(/^ +a\.example +concurrency 2 in flight +\[#{20}\] +2\/2 +3 +concurrency 2$/m);
      release();
      await waitFor(() => ran.filter((d) => d === 'a.example').length === 5, 10_000, 'the rest of a.example ran');
    } finally {
      // A failed expectation must not leave the held processors hanging the worker's close.
      release();
      await admin.close();
    }
  });

});
