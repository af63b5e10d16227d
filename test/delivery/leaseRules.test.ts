import { Job, Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { getThrottledCount, Key, mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { takeLeasedJobs } from '../../src/delivery/leased/takeLeasedJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { connectionFor, waitFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { sustainedRatePerMs } from '../support/rates';

/** The rules of leased delivery, with the throttles counted on a Redis of their own (the grantor option). */
describe('leased delivery rules', () => {
  let grantorServer: LocalRedisServer;
  let redis: Redis;
  let prefix: string;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => { grantorServer = await startLocalRedisServer(); });
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('rules');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });
  afterAll(async () => { await grantorServer.stop(); });

  function worker(name: string, processor: ((job: Job) => Promise<void>) | null, throttle: Throttle, leaseMs: number, concurrency = 5): ThrottledWorker {
    const w = new ThrottledWorker(name, processor, {
      connection: connectionFor(), prefix, concurrency, leaseMs, throttles: [throttle], grantor: { connection: connectionFor(grantorServer.url) },
    });
    w.on('error', () => undefined);
    closers.push(() => w.close());
    return w;
  }

  it('rule 1: a token older than h on the queue node\'s clock is never spent, and is counted as expired', async () => {
    const leaseMs = 50;
    const queue = new Queue('r1', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    // A worker that never runs: it registers and publishes the queue's config; this test makes the delivery calls.
    const w = worker('r1', null, Throttle.named('api').limit(1, '10m'), leaseMs, 1);
    await w.waitUntilReady();
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'call', data: { i } })));
    const q = new ThrottleKeys(prefix).queue('r1');
    const runner = new ScriptRunner(redis);
    const call = {
      bullmqKeys: new QueueKeys(prefix).getKeys('r1'), queueKeys: q, throttlePrefix: new ThrottleKeys(prefix).throttlePrefix,
      lockDuration: 30_000, leaseMs, workerName: '', gen: (await redis.hget(q.state, 'gen'))!, durableRedis: false,
    };
    const first = await takeLeasedJobs(runner, { ...call, tokens: ['t0'] }, 10, 0, [], '');
    expect(first.reply.jobs).toEqual([]);
    expect(first.lease.wanted).toHaveLength(1);
    const { member } = first.lease.wanted[0];
    const node = first.lease.node;
    const nowUs = async () => { const [s, us] = await redis.time(); return Number(s) * 1e6 + Number(us); };
    const deposit = (requestUs: number, nonce: string) => ({ member, requestUs, grantUs: 1, nonce, count: 1, roomInMs: 0, lacking: '', refill: false });

    // Requested more than h ago: refused on arrival, counted expired, answered for return.
    const late = await takeLeasedJobs(runner, { ...call, tokens: ['t1'] }, 0, 0, [deposit((await nowUs()) - (leaseMs + 5) * 1000, 'late')], node);
    expect(late.reply.jobs).toEqual([]);
    expect(late.lease.expired).toBe(1);
    expect(late.lease.returns.map((r) => [r.nonce, r.count])).toEqual([['late/x', 1]]);

    // In time, but not spent within h: swept unspent and counted expired.
    await takeLeasedJobs(runner, { ...call, tokens: [] }, 0, 0, [deposit(await nowUs(), 'slow')], node);
    await new Promise((r) => setTimeout(r, leaseMs + 10));
    const swept = await takeLeasedJobs(runner, { ...call, tokens: ['t2'] }, 0, 0, [], node);
    expect(swept.reply.jobs).toEqual([]);
    expect(swept.lease.expired).toBe(1);

    // Measured on another node's clock (the queue's node changed since): refused.
    const elsewhere = await takeLeasedJobs(runner, { ...call, tokens: ['t3'] }, 0, 0, [deposit(await nowUs(), 'other')], 'another-node');
    expect(elsewhere.reply.jobs).toEqual([]);

    // In time: spent.
    const spent = await takeLeasedJobs(runner, { ...call, tokens: ['t4'] }, 0, 0, [deposit(await nowUs(), 'fresh')], node);
    expect(spent.reply.jobs).toHaveLength(1);

    const admin = new ThrottleAdmin({ connection: connectionFor(), prefix, grantor: { connection: connectionFor(grantorServer.url) } });
    closers.push(() => admin.close());
    expect((await admin.throttleStats('api')).tokensExpired).toBe(3);
  });

  it('many buckets of a keyed throttle that never bind: every job delivered, no class left waiting', async () => {
    const queue = new Queue('keyed', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 1500 }, (_, i) => ({ name: 'call', data: { customer: `c${i % 300}` } })));
    const done: string[] = [];
    const w = new ThrottledWorker('keyed', async (job: Job) => { done.push(job.id!); }, {
      connection: connectionFor(), prefix, concurrency: 20, grantor: { connection: connectionFor(grantorServer.url) },
      throttles: [Throttle.named('all').limit(100_000, '1s'), Throttle.named('per-customer').key([Key.data('customer')]).limit(1_000, '1s')],
    });
    w.on('error', () => undefined);
    closers.push(() => w.close());
    await waitFor(() => done.length === 1500, 60_000, 'every job of every customer');
    expect(new Set(done).size).toBe(1500);
  });

  it('a class granted less than it asked waits for the room the grantor named, with no delivery calls meanwhile', async () => {
    const queue = new Queue('partial', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'call', data: { hog: `h${i % 2}` } })));
    const done: string[] = [];
    // 'all' has room for everything; 'hog' lets one job of each key through per 10 minutes: the first
    // lease for a hog class is granted 1 of what it asked, with room again in 10 minutes.
    const w = new ThrottledWorker('partial', async (job: Job) => { done.push(job.id!); }, {
      connection: connectionFor(), prefix, concurrency: 5, grantor: { connection: connectionFor(grantorServer.url) },
      throttles: [Throttle.named('all').limit(100_000, '1s'), Throttle.named('hog').key([Key.data('hog')]).limit(1, '10m')],
    });
    w.on('error', () => undefined);
    closers.push(() => w.close());
    await waitFor(async () => done.length === 2 && (await getThrottledCount(queue)).held === 38, 20_000, 'one job of each key, the rest held')
      .catch(async (error) => { throw new Error(`${error.message}: done ${done.length}, ${JSON.stringify(await getThrottledCount(queue))}`); });
    const calls = jest.spyOn(ScriptRunner.prototype, 'run');
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const deliveryCalls = calls.mock.calls.filter(([name]) => name === 'takeLeasedJobs').length;
      // Before the fix, classes waiting on 'all' (no word from its grantor) looked again every 50 ms: 20 a second.
      expect(deliveryCalls).toBeLessThan(5);
    } finally {
      calls.mockRestore();
    }
    expect(done).toHaveLength(2);
  });

  it('rule 2: saturated, at most N in any W, sustained near N / (W + h)', async () => {
    const N = 30;
    const W = 1_000;
    const leaseMs = 100;
    const starts: number[] = [];
    for (const name of ['r2a', 'r2b']) {
      const queue = new Queue(name, { connection: connectionFor(), prefix });
      closers.push(() => queue.close());
      await queue.addBulk(Array.from({ length: 90 }, (_, i) => ({ name: 'call', data: { i } })));
      worker(name, async (job) => { starts.push(job.processedOn!); }, Throttle.named('api').limit(N, `${W}ms`), leaseMs);
    }
    await waitFor(() => starts.length === 180, 30_000, 'the backlog');
    expect(mostInAnyWindow(starts, W)).toBeLessThanOrEqual(N);
    const ceiling = N / (W + leaseMs);
    const fraction = sustainedRatePerMs(starts, N) / ceiling;
    process.stderr.write(`leased, 2 queues: sustained ${(fraction * 100).toFixed(1)}% of N/(W + h) = ${(ceiling * 1000).toFixed(1)}/s\n`);
    // Saturated, so the bound above was tested at full load; the rate itself is a speed figure (npm run bench,
    // clusterThroughput part 2). Alone 99.5-99.7 %; inside the full suite's load 89.6-99.1 % (this session's
    // rehearsals, one under 90 %): the floor asks for saturation, not for the figure.
    expect(fraction).toBeGreaterThan(0.8);
  });
});

