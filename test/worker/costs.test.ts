import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Cost, Key, Throttle, ThrottleAdmin } from '../../src';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { mostCostAtOnce, mostCostInAnyWindow } from '../support/inFlight';

// Throttle.cost(source): a job counts its cost against every limit of the throttle.
describe('costs', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('costs');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('a tokens-per-window limit counts each job\'s tokens beside a requests limit: neither is ever exceeded', async () => {
    const tokens = Throttle.named('llm-tokens').cost(Cost.data('usage.tokens')).limit(1_000, '1s');
    const requests = Throttle.named('llm-requests').limit(8, '1s');
    const queue = bed.queue('prompts');
    const seen: { at: number; cost: number }[] = [];
    bed.worker('prompts', async (job: Job) => { seen.push({ at: job.processedOn!, cost: job.data.usage.tokens }); }, { concurrency: 10, throttles: [tokens, requests] });
    const costs = Array.from({ length: 40 }, (_, i) => [50, 400, 120, 10, 300][i % 5]);
    await queue.addBulk(costs.map((cost) => ({ name: 'prompt', data: { usage: { tokens: cost } } })));
    await waitFor(() => seen.length === 40, 30_000, 'every prompt delivered');
    expect(mostCostInAnyWindow(seen, 1000)).toBeLessThanOrEqual(1_000);
    expect(mostCostInAnyWindow(seen.map((s) => ({ at: s.at, cost: 1 })), 1000)).toBeLessThanOrEqual(8);
    // The token limit binds (880 per 5 jobs, 1000/s): it is used, not left idle.
    expect(mostCostInAnyWindow(seen, 1000)).toBeGreaterThan(600);
  });

  it('costs against a concurrency: the jobs in flight of a bucket never cost more than n together', async () => {
    // Keyed on an attribute: the worker classifies these jobs (the delivery script classifies data keys).
    const gpu = Throttle.named('gpu-slots').key([Key.attribute('cluster')]).cost(Cost.data('gpus')).concurrency(8);
    const queue = bed.queue('training');
    const spans: { cluster: string; from: number; to: number; cost: number }[] = [];
    bed.worker('training', async (job: Job) => {
      await sleep(20 + (job.data.gpus * 7) % 40);
      spans.push({ cluster: job.data.cluster, from: job.processedOn!, to: Date.now(), cost: job.data.gpus });
    }, { concurrency: 12, throttles: [gpu], attributes: (job) => ({ cluster: (job.data as { cluster: string }).cluster }) });
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'train', data: { cluster: i % 2 ? 'east' : 'west', gpus: [1, 4, 2, 8, 3][i % 5] } })));
    await waitFor(() => spans.length === 60, 30_000, 'every job ran');
    for (const cluster of ['east', 'west']) {
      const mine = spans.filter((s) => s.cluster === cluster);
      expect(mostCostAtOnce(mine)).toBeLessThanOrEqual(8);
      expect(mostCostAtOnce(mine)).toBeGreaterThanOrEqual(6);
    }
  });

  it('a sandboxed processor (a processor file): a job without a usable cost fails as one with a processor function does, unrun', async () => {
    const strict = Throttle.named('sandboxed-tokens').cost(Cost.data('tokens')).limit(100, '1m');
    const queue = bed.queue('sandboxed-costs');
    bed.worker('sandboxed-costs', join(__dirname, '..', 'support', 'sandboxedRetryAfter.js'), { concurrency: 2, throttles: [strict] });
    const [missing, fine] = await Promise.all([queue.add('missing', {}, { attempts: 3 }), queue.add('fine', { tokens: 10 }, { attempts: 3 })]);
    await waitFor(async () => (await queue.getFailedCount()) === 1 && (await queue.getCompletedCount()) === 1, 20_000, 'one failed, one completed');
    const failed = (await queue.getJob(missing.id!))!;
    expect({ reason: failed.failedReason, attempts: failed.attemptsMade, returned: failed.returnvalue ?? null }).toEqual({
      reason: "Throttle 'sandboxed-tokens' counts job.data.tokens for each job, and this job's is missing: it must be a positive whole number. Give the job one, or declare a default: cost(…, { default: 1 }).",
      attempts: 1, returned: null,
    });
    expect((await queue.getJob(fine.id!))!.returnvalue).toHaveProperty('startedAt');
  });

  it('a job without a usable cost, or costing more than a limit lets go, fails at once with the reason and without retries; a default counts instead', async () => {
    const strict = Throttle.named('strict-tokens').cost(Cost.data('tokens')).limit(100, '1m');
    const queue = bed.queue('strict');
    const ran: string[] = [];
    bed.worker('strict', async (job: Job) => { ran.push(job.name); }, { concurrency: 4, throttles: [strict] });
    // Failing jobs count nothing: the job costing the whole limit still goes at once.
    const [missing, text, huge] = await Promise.all([
      queue.add('missing', {}, { attempts: 3 }),
      queue.add('text', { tokens: '12' }, { attempts: 3 }),
      queue.add('huge', { tokens: 101 }, { attempts: 3 }),
      queue.add('fine', { tokens: 100 }, { attempts: 3 }),
    ]);
    await waitFor(async () => (await queue.getFailedCount()) === 3 && (await queue.getCompletedCount()) === 1, 5_000, 'three failed, one completed');
    expect(ran).toEqual(['fine']);
    const reasonOf = async (id: string) => { const job = (await queue.getJob(id))!; return { reason: job.failedReason, attempts: job.attemptsMade }; };
    expect(await reasonOf(missing.id!)).toEqual({ attempts: 1, reason: "Throttle 'strict-tokens' counts job.data.tokens for each job, and this job's is missing: it must be a positive whole number. Give the job one, or declare a default: cost(…, { default: 1 })." });
    expect((await reasonOf(text.id!)).reason).toMatch(/this job's is "12": it must be a positive whole number/);
    expect((await reasonOf(huge.id!)).reason).toBe("Throttle 'strict-tokens': this job costs 101, more than the 100 its limits let go at once (limit 100 per 1m): it could never be delivered. Split the job, or raise the limit.");

    const lenient = Throttle.named('lenient-tokens').cost(Cost.data('tokens'), { default: 30 }).limit(100, '1m');
    const other = bed.queue('lenient');
    const seen: { at: number; name: string }[] = [];
    bed.worker('lenient', async (job: Job) => { seen.push({ at: job.processedOn!, name: job.name }); }, { concurrency: 4, throttles: [lenient] });
    const added = await other.addBulk(['a', 'b', 'c', 'd'].map((name) => ({ name, data: {} })));
    await waitFor(() => seen.length === 3, 10_000, 'three of 30 delivered');
    await sleep(500);
    // 3 x 30 fit in 100; the fourth waits for the window.
    expect(seen).toHaveLength(3);
    const left = added.find((job) => !seen.some((s) => s.name === job.name))!;
    const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
    try {
      expect((await admin.queueStats('lenient')).heldByFullBuckets).toBe(1);
      const explained = await admin.explainJob('lenient', left.id!);
      expect(explained.buckets).toHaveLength(1);
      expect(explained.buckets[0]).toMatchObject({ throttle: 'lenient-tokens', cost: 30, holdsIt: true });
    } finally {
      await admin.close();
    }
  });

  it('a cost from an attribute, computed by the worker', async () => {
    const pages = Throttle.named('render-pages').cost(Cost.attribute('pages')).limit(20, '1s');
    const queue = bed.queue('render');
    const seen: { at: number; cost: number }[] = [];
    bed.worker('render', async (job: Job) => { seen.push({ at: job.processedOn!, cost: job.data.doc.length }); }, {
      concurrency: 5, throttles: [pages], attributes: (job) => ({ pages: (job.data as { doc: string }).doc.length }),
    });
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'doc', data: { doc: 'x'.repeat(1 + (i % 6)) } })));
    await waitFor(() => seen.length === 12, 15_000, 'every document rendered');
    expect(mostCostInAnyWindow(seen, 1000)).toBeLessThanOrEqual(20);
  });

  it('three worker processes on two queues share a tokens-per-second limit: never more than N tokens in any second, and it is used', async () => {
    const run = (queue: string) => new Promise<{ at: number; startedAt: number; cost: number }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'costWorkerProcess.ts')], {
        env: { ...process.env, COST_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue, runMs: 5_000, tokens: 2_000, requests: 40 }) },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const jobs = (count: number) => Array.from({ length: count }, (_, i) => ({ name: 'prompt', data: { tokens: [50, 400, 120, 10, 300, 250][i % 6] } }));
    await bed.queue('prompts-a').addBulk(jobs(300));
    await bed.queue('prompts-b').addBulk(jobs(300));
    const all = (await Promise.all([run('prompts-a'), run('prompts-a'), run('prompts-b')])).flat();
    // From processedOn and from the moment each processor started (where the API sees it).
    const mostTokens = [all, all.map((d) => ({ at: d.startedAt, cost: d.cost }))].map((starts) => mostCostInAnyWindow(starts, 1000));
    process.stderr.write(`costs, 3 processes: most tokens in any 1 s ${mostTokens[0]} (processedOn) / ${mostTokens[1]} (processor starts) of 2,000\n`);
    for (const starts of [all, all.map((d) => ({ at: d.startedAt, cost: d.cost }))]) {
      expect(mostCostInAnyWindow(starts, 1000)).toBeLessThanOrEqual(2_000);
      expect(mostCostInAnyWindow(starts.map((d) => ({ at: d.at, cost: 1 })), 1000)).toBeLessThanOrEqual(40);
    }
    // Past the first second, the tokens per second delivered, against the 2,000 allowed.
    const times = all.map((d) => d.at).sort((a, b) => a - b);
    const spanMs = times[times.length - 1] - times[0];
    const tokens = all.reduce((sum, d) => sum + d.cost, 0);
    const longestGapMs = Math.max(...times.slice(1).map((at, i) => at - times[i]));
    process.stderr.write(`costs, 3 processes: ${all.length} deliveries, ${tokens} tokens in ${spanMs} ms (${Math.round((tokens * 1000) / spanMs)} tokens/s of 2,000), longest gap between deliveries ${longestGapMs} ms\n`);
    // Used, not left idle: at most 2,000 x (span + 1 s) could go. An idle machine uses all of it (10,000 of 10,000 in
    // three runs); CI used 67% once (6,730 tokens in 4,051 ms), and a rehearsal with every core busy 43%, so the floor
    // here is a third, which a throttle that stalls or delivers one job a window (about a tenth) still fails. The
    // utilisation figure itself is benchmarks/deliveryByKind's.
    expect(tokens / (2_000 * ((spanMs + 1000) / 1000))).toBeGreaterThan(1 / 3);
  }, 60_000);
});
