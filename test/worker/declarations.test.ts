import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Key, mostInAnyWindow, Throttle, ThrottleConflictError } from '../../src';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { capturingLogger, waitFor, WorkerTestBed } from '../support/bullmq';

/** The published window limits, window ms -> N (without `v`, the registry version, `d`, the declared windows, ...). */
async function effectiveLimits(redis: Redis, prefix: string, name: string): Promise<Record<string, string>> {
  const fields = await redis.hgetall(new ThrottleKeys(prefix).effectiveLimits(name));
  return Object.fromEntries(Object.entries(fields).filter(([field]) => /^\d+$/.test(field)));
}

describe('declarations across workers', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('decl');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it("a throttle declared by any live worker applies to jobs another worker receives", async () => {
    const queue = bed.queue('shared');
    const declaring = bed.worker('shared', null, { throttles: [Throttle.named('api').limit(3, '1m')] });
    await declaring.waitUntilReady();
    const seen: number[] = [];
    // This worker declares nothing, and is the only one processing.
    const plain = bed.worker('shared', async (job) => { seen.push(job.processedOn!); }, { throttles: [] });
    await plain.waitUntilReady();
    await queue.addBulk(Array.from({ length: 8 }, () => ({ name: 'n', data: {} })));
    await waitFor(() => seen.length === 3, 10_000, 'three deliveries');
    await new Promise((r) => setTimeout(r, 400));
    expect(seen).toHaveLength(3);
  });

  it('throttles sharing a name across queues share one limit', async () => {
    const a = bed.queue('queue-a');
    const b = bed.queue('queue-b');
    const seen: number[] = [];
    const stripe = Throttle.named('stripe').limit(4, '1m');
    bed.worker('queue-a', async (job) => { seen.push(job.processedOn!); }, { throttles: [stripe] });
    bed.worker('queue-b', async (job) => { seen.push(job.processedOn!); }, { throttles: [stripe] });
    await a.addBulk(Array.from({ length: 5 }, () => ({ name: 'n', data: {} })));
    await b.addBulk(Array.from({ length: 5 }, () => ({ name: 'n', data: {} })));
    await waitFor(() => seen.length === 4, 10_000, 'four deliveries');
    await new Promise((r) => setTimeout(r, 400));
    expect(seen).toHaveLength(4);
  });

  it('a different key fails the start with ThrottleConflictError, and leaves the running worker as it was', async () => {
    const first = bed.worker('conflict', null, { throttles: [Throttle.named('per').key([Key.data('customer')]).limit(5, '1s')] });
    await first.waitUntilReady();
    const second = bed.worker('conflict', null, { throttles: [Throttle.named('per').key([Key.data('account')]).limit(5, '1s')] });
    await expect(second.waitUntilReady()).rejects.toThrow(ThrottleConflictError);
    await expect(second.waitUntilReady()).rejects.toThrow(/declared with key \[Key.data\("(customer|account)"\)\] and with key \[Key.data\("(account|customer)"\)\]/);
    // Conflicts span queues too: one name is one set of buckets.
    const elsewhere = bed.worker('other-queue', null, { throttles: [Throttle.named('per').limit(5, '1s')] });
    await expect(elsewhere.waitUntilReady()).rejects.toThrow(ThrottleConflictError);
    expect(first.effectiveThrottles.map((t) => t.name)).toEqual(['per']);
  });

  it('rolling deploy: a lower limit applies from the first updated worker; a higher one once no worker declares the old', async () => {
    const old = bed.worker('deploy', null, { throttles: [Throttle.named('api').limit(10, '1s')] });
    await old.waitUntilReady();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '10' });
    const lower = bed.worker('deploy', null, { throttles: [Throttle.named('api').limit(5, '1s')] });
    await lower.waitUntilReady();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '5' });
    const higher = bed.worker('deploy', null, { throttles: [Throttle.named('api').limit(20, '1s')] });
    await higher.waitUntilReady();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '5' });
    await lower.close();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '10' });
    await old.close();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '20' });
  });

  it("a crashed worker's declaration lapses after declarationTtlMs", async () => {
    const ttlMs = 1500;
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'declaringWorkerProcess.ts')], {
      env: { ...process.env, DECLARING_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue: 'crash', ttlMs, max: 2 }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    const { logger, lines } = capturingLogger();
    const survivor = bed.worker('crash', null, { throttles: [Throttle.named('api').limit(8, '1s')], declarationTtlMs: ttlMs, logger });
    await survivor.waitUntilReady();
    expect(await effectiveLimits(redis, bed.prefix, 'api')).toEqual({ '1000': '2' });
    child.kill('SIGKILL');
    const killedAt = Date.now();
    await waitFor(async () => (await effectiveLimits(redis, bed.prefix, 'api'))['1000'] === '8', 10_000, 'the lapsed declaration to lift');
    // Bounded: within the time to live plus one heartbeat of the survivor.
    expect(Date.now() - killedAt).toBeLessThan(ttlMs + ttlMs / 3 + 1000);
    expect(lines.some((l) => /stopped refreshing them lapsed/.test(l.msg))).toBe(true);
  });
});

describe('guarantee across processes and queues', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('procs');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('never more than N in any window, counting every worker process and both queues, with the shared bucket saturated', async () => {
    const run = (queue: string) => new Promise<{ processedOn: number; startedAt: number; customer: string }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'guaranteeWorkerProcess.ts')], {
        env: { ...process.env, GUARANTEE_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue, runMs: 5500 }) },
        maxBuffer: 64 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const a = bed.queue('guarantee-a');
    const b = bed.queue('guarantee-b');
    const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ name: 'charge', data: { customer: `c${i % 3}` } }));
    await a.addBulk(jobs(400));
    await b.addBulk(jobs(400));
    const [fromA1, fromA2, fromB] = await Promise.all([run('guarantee-a'), run('guarantee-a'), run('guarantee-b')]);
    const all = [...fromA1, ...fromA2, ...fromB];
    const shared = all.map((d) => d.processedOn);
    // From processedOn (Redis's clock) and from the moment each processor started (where an API would see it).
    for (const at of ['processedOn', 'startedAt'] as const) {
      expect(mostInAnyWindow(all.map((d) => d[at]), 1000)).toBeLessThanOrEqual(80);
      for (const customer of ['c0', 'c1', 'c2']) {
        expect(mostInAnyWindow(all.filter((d) => d.customer === customer).map((d) => d[at]), 1000)).toBeLessThanOrEqual(40);
      }
    }
    const sorted = [...shared].sort((x, y) => x - y);
    let cycle = 0;
    for (let i = 0; i + 80 < sorted.length; i++) cycle += sorted[i + 80] - sorted[i];
    const rate = 80 / (cycle / (sorted.length - 80));
    process.stderr.write(`3 processes, 2 queues: ${all.length} deliveries, sustained ${(rate * 1000).toFixed(1)}/s of 80/s\n`);
    // Saturated, so the bounds above were tested at full load: some window held all 80. The sustained rate itself
    // is a speed figure (printed above; benchmarks/limiterAccuracy and processorStarts measure it), not asserted:
    // the start deadline holds it under N / (W + h), and on a machine whose every core is busy it fell to 58-77/s
    // in the CI rehearsals of the bullmq lines.
    expect(mostInAnyWindow(shared, 1000)).toBe(80);
  });
});
