import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Job, Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Cost, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { Deposit, takeLeasedJobs } from '../../src/delivery/leased/takeLeasedJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { connectionFor, waitFor } from '../support/bullmq';
import { mostCostInAnyWindow } from '../support/inFlight';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';

/** Costs in leased delivery: a token is one unit, a delivery spends its job's cost in tokens from each bucket. */
describe('leased delivery with costs', () => {
  let grantorServer: LocalRedisServer;
  let redis: Redis;
  let prefix: string;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => { grantorServer = await startLocalRedisServer(); });
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('lcost');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });
  afterAll(async () => { await grantorServer.stop(); });

  function worker(name: string, processor: ((job: Job) => Promise<void>) | null, throttles: Throttle[], concurrency: number, leaseMs: number): ThrottledWorker {
    const w = new ThrottledWorker(name, processor, {
      connection: connectionFor(), prefix, concurrency, leaseMs, throttles, grantor: { connection: connectionFor(grantorServer.url) },
    });
    w.on('error', () => undefined);
    closers.push(() => w.close());
    return w;
  }

  it('a grant of k deliveries puts k × cost tokens in one pool entry; deliveries spend their cost; what is not kept goes back in units', async () => {
    const queue = new Queue('units', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    // A worker that never runs: it publishes the queue's config; this test makes the delivery calls.
    const w = worker('units', null, [Throttle.named('tok').cost(Cost.data('tokens')).limit(1_000, '10m')], 1, 2_000);
    await w.waitUntilReady();
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'call', data: { i, tokens: 30 } })));
    const q = new ThrottleKeys(prefix).queue('units');
    const pool = `${q.base}:lp:tok=-`;
    const runner = new ScriptRunner(redis);
    const call = {
      bullmqKeys: new QueueKeys(prefix).getKeys('units'), queueKeys: q, throttlePrefix: new ThrottleKeys(prefix).throttlePrefix,
      lockDuration: 30_000, leaseMs: 2_000, workerName: '', gen: (await redis.hget(q.state, 'gen'))!, durableRedis: false,
    };
    const first = await takeLeasedJobs(runner, { ...call, tokens: ['t0', 't1', 't2'] }, 10, 0, [], '');
    expect(first.reply.jobs).toEqual([]);
    expect(first.lease.wanted).toHaveLength(1);
    const { member, held } = first.lease.wanted[0];
    // The class names its cost in the bucket: the grantor counts 30 tokens per delivery.
    expect(member).toMatch(/\/tok=-\$30$/);
    // The first job is filed into its class; the two behind stay in wait while its tokens are on their way.
    expect(held).toBe(1);
    const node = first.lease.node;
    const [s, us] = await redis.time();
    const requestUs = Number(s) * 1e6 + Number(us);
    const deposit = (nonce: string, count: number, more: Partial<Deposit> = {}): Deposit => ({ member, requestUs, grantUs: 1, nonce, count, roomInMs: 0, lacking: '', refill: false, ...more });

    // Two deliveries granted (leased ahead: kept beyond the held job): one entry of 60 tokens.
    await takeLeasedJobs(runner, { ...call, tokens: [] }, 0, 0, [deposit('two', 2, { refill: true })], node);
    expect(await redis.zrange(pool, '0', '-1')).toEqual(['1:2000:two#60']);
    const one = await takeLeasedJobs(runner, { ...call, tokens: ['t3'] }, 0, 0, [], node);
    expect(one.reply.jobs).toHaveLength(1);
    // Spent in part: the entry keeps what is left, under the same expiry.
    expect(await redis.zrange(pool, '0', '-1')).toEqual(['1:2000:two#30']);
    const second = await takeLeasedJobs(runner, { ...call, tokens: ['t4', 't5'] }, 0, 0, [], node);
    expect(second.reply.jobs).toHaveLength(1);
    expect(await redis.exists(pool)).toBe(0);

    // The grantor has no room for a while: the third job, waiting in bullmq's list for tokens on their way,
    // is filed into its class. Five granted for it then: one kept, four deliveries' tokens (120) answered for return.
    const refused = await takeLeasedJobs(runner, { ...call, tokens: ['t6'] }, 0, 0, [deposit('none', 0, { roomInMs: 60_000, lacking: 'tok=-' })], node);
    expect(refused.reply.jobs).toEqual([]);
    const more = await takeLeasedJobs(runner, { ...call, tokens: [] }, 0, 0, [deposit('five', 5)], node);
    expect(more.lease.returns.map((r) => [r.bucketId, r.nonce, r.count])).toEqual([['tok=-', 'five/x', 120]]);
    expect(await redis.zrange(pool, '0', '-1')).toEqual(['1:2000:five#30']);

    // Withdrawn by the queue's last closing worker (here: none lives, by the workers key given), a pool's tokens
    // go back in units, under the grant's nonce.
    const withdrawn = (await runner.run('withdrawLeases', [`${q.base}:no-workers`], [q.base, 'closing'])) as (string | number)[];
    expect(withdrawn.map(String)).toEqual(['1', 'tok=-', '1', '2000', 'five/w', '30']);
    expect(await redis.exists(pool)).toBe(0);
  });

  it('jobs costing thousands each against a tokens-per-window limit: never more than N in any window, every job delivered', async () => {
    const queue = new Queue('big', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    const seen: { at: number; cost: number }[] = [];
    worker('big', async (job) => { seen.push({ at: job.processedOn!, cost: job.data.tokens }); }, [
      Throttle.named('llm-tokens').cost(Cost.data('tokens')).limit(90_000, '2s'),
      Throttle.named('llm-requests').limit(20, '2s'),
    ], 6, 100);
    const costs = Array.from({ length: 30 }, (_, i) => [5_000, 12_000, 800, 30_000, 2_500][i % 5]);
    await queue.addBulk(costs.map((tokens) => ({ name: 'prompt', data: { tokens } })));
    await waitFor(() => seen.length === 30, 30_000, 'every prompt delivered');
    expect(mostCostInAnyWindow(seen, 2_000)).toBeLessThanOrEqual(90_000);
    expect(mostCostInAnyWindow(seen.map((d) => ({ at: d.at, cost: 1 })), 2_000)).toBeLessThanOrEqual(20);
    // 30 jobs cost 303,000 tokens: the token limit binds, and is used.
    expect(mostCostInAnyWindow(seen, 2_000)).toBeGreaterThan(60_000);
  });

  it('three worker processes on queues of two Redis servers, one grantor: a tokens-per-second limit never exceeded, and used', async () => {
    const queueServers = [await startLocalRedisServer(), await startLocalRedisServer()];
    closers.push(async () => { for (const server of queueServers) await server.stop(); });
    const jobs = Array.from({ length: 300 }, (_, i) => ({ name: 'prompt', data: { tokens: [50, 400, 120, 10, 300, 250][i % 6] } }));
    for (const server of queueServers) {
      const queue = new Queue('prompts', { connection: connectionFor(server.url), prefix });
      await queue.addBulk(jobs);
      await queue.close();
    }
    const run = (url: string) => new Promise<{ at: number; startedAt: number; cost: number }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'costWorkerProcess.ts')], {
        env: { ...process.env, COST_WORKER: JSON.stringify({ url, grantorUrl: grantorServer.url, prefix, queue: 'prompts', runMs: 5_000, tokens: 2_000, requests: 40 }) },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const all = (await Promise.all([run(queueServers[0].url), run(queueServers[0].url), run(queueServers[1].url)])).flat();
    // From processedOn and from the moment each processor started (where the API sees it).
    for (const starts of [all, all.map((d) => ({ at: d.startedAt, cost: d.cost }))]) {
      expect(mostCostInAnyWindow(starts, 1000)).toBeLessThanOrEqual(2_000);
      expect(mostCostInAnyWindow(starts.map((d) => ({ at: d.at, cost: 1 })), 1000)).toBeLessThanOrEqual(40);
    }
    const times = all.map((d) => d.at).sort((a, b) => a - b);
    const spanMs = times[times.length - 1] - times[0];
    const tokens = all.reduce((sum, d) => sum + d.cost, 0);
    process.stderr.write(`leased costs, 3 processes, 2 servers: ${all.length} deliveries, ${tokens} tokens in ${spanMs} ms (${Math.round((tokens * 1000) / spanMs)} tokens/s of 2,000)\n`);
    // Used, not left idle. Leased, the ceiling is N per W + h (h = 100 ms here): 2,000 per 1.1 s. Idle, a run uses
    // about 0.7 of it; a CI rehearsal with every core busy used 0.55 (1,109 tokens/s), so the floor is a third,
    // which a stall or one grant a window still fails. The utilisation figure itself is the benchmarks'.
    expect(tokens / ((spanMs + 1000) / 1000) / (2_000 / 1.1)).toBeGreaterThan(1 / 3);
  }, 60_000);
});
