import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, mostInAnyWindow, Throttle, ThrottleAdmin } from '../../src';
import { limitCommand } from '../../src/cli/commands/limit';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

// Limits changed at run time (ThrottleAdmin.setLimits / clearLimits, the CLI's limit) on one Redis.
describe('setLimits and clearLimits', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let admin: ThrottleAdmin;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('limits');
    admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  });
  afterEach(async () => {
    await admin.close();
    await bed.close(redis);
    await redis.quit();
  });
  const redisNowMs = async () => { const [s, us] = await redis.time(); return Number(s) * 1000 + Math.floor(Number(us) / 1000); };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('a limit lowered, raised and cleared live: each holds fully one window after it was set, none is ever exceeded', async () => {
    const queue = bed.queue('live');
    const starts: number[] = [];
    bed.worker('live', async (job: Job) => { starts.push(job.processedOn!); }, { concurrency: 10, throttles: [Throttle.named('api').limit(10, '1s')] });
    await queue.addBulk(Array.from({ length: 400 }, () => ({ name: 'call', data: {} })));
    await waitFor(() => starts.length >= 10, 10_000, 'the declared limit saturated');
    const loweredAt = await redisNowMs();
    await admin.setLimits('api', [{ max: 3, window: '1s' }]);
    expect((await admin.throttleStats('api'))).toMatchObject({
      limitSource: 'override', limits: [{ max: 3, windowMs: 1000 }], overrides: { throttle: { until: null }, buckets: 0 }, effective: { perSecond: 3, binding: '3 per 1s' },
    });
    await sleep(2_500);
    const raisedAt = await redisNowMs();
    await admin.setLimits('api', [{ max: 30, window: '1s' }]);
    await sleep(2_500);
    const clearedAt = await redisNowMs();
    await admin.clearLimits('api');
    expect((await admin.throttleStats('api')).limitSource).toBe('declared');
    await sleep(2_500);
    const between = (from: number, to: number) => starts.filter((at) => at >= from && at < to);
    // Deliveries already in the window stay counted: the new N holds in every window that starts after the change.
    expect(mostInAnyWindow(between(loweredAt, raisedAt), 1000)).toBeLessThanOrEqual(10);
    expect(mostInAnyWindow(between(loweredAt + 1000, raisedAt), 1000)).toBeLessThanOrEqual(3);
    expect(between(loweredAt + 1000, raisedAt).length).toBeGreaterThanOrEqual(3);
    expect(mostInAnyWindow(between(raisedAt, clearedAt), 1000)).toBeLessThanOrEqual(30);
    expect(mostInAnyWindow(between(raisedAt, clearedAt), 1000)).toBeGreaterThan(10);
    // Back to 10: the deliveries made under 30/s were counted in the declared window all along.
    expect(mostInAnyWindow(between(clearedAt, clearedAt + 10_000), 1000)).toBeLessThanOrEqual(30);
    expect(mostInAnyWindow(between(clearedAt + 1000, clearedAt + 10_000), 1000)).toBeLessThanOrEqual(10);
  });

  it('a tier for one key, kept across a worker restart, and a TTL after which the declared limit is back', async () => {
    const queue = bed.queue('tiers');
    const starts: { at: number; customer: string }[] = [];
    const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(2, '1s');
    const startWorker = () => bed.worker('tiers', async (job: Job) => { starts.push({ at: job.processedOn!, customer: job.data.customer }); }, { concurrency: 10, throttles: [perCustomer] });
    const first = startWorker();
    await first.waitUntilReady();
    await admin.setLimits('api-per-customer', [{ max: 8, window: '1s' }], { key: ['bigco'] });
    // Its TTL runs on the Redis clock from this call: until at least trialSetAt + 1,500, however long the restart below takes.
    const trialSetAt = await redisNowMs();
    await admin.setLimits('api-per-customer', [{ max: 1, window: '1s' }], { key: ['trial'], ttlMs: 1_500 });
    expect((await admin.throttleStats('api-per-customer')).overrides.buckets).toBe(2);
    expect(await admin.throttleBucket('api-per-customer', ['bigco'])).toMatchObject({ limitSource: 'override', limits: [{ max: 8, windowMs: 1000 }] });
    await first.close();
    startWorker();
    const setAt = await redisNowMs();
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'call', data: { customer: ['bigco', 'acme', 'trial'][i % 3] } })));
    await waitFor(() => starts.length === 60, 30_000, 'every job delivered');
    const of = (customer: string) => starts.filter((s) => s.customer === customer).map((s) => s.at);
    expect(mostInAnyWindow(of('bigco'), 1000)).toBeLessThanOrEqual(8);
    expect(mostInAnyWindow(of('bigco'), 1000)).toBeGreaterThan(2);
    expect(mostInAnyWindow(of('acme'), 1000)).toBeLessThanOrEqual(2);
    // trial: 1 per second while its override lasts, then the declared 2 (its earlier deliveries counted in both).
    expect(mostInAnyWindow(of('trial').filter((at) => at < trialSetAt + 1_400), 1000)).toBeLessThanOrEqual(1);
    expect(mostInAnyWindow(of('trial'), 1000)).toBeLessThanOrEqual(2);
    expect(mostInAnyWindow(of('trial').filter((at) => at > setAt + 2_600), 1000)).toBe(2);
  });

  it('lowered then raised while two worker processes (real child processes) deliver: each new limit holds in both', async () => {
    const queue = bed.queue('processes');
    await queue.addBulk(Array.from({ length: 300 }, () => ({ name: 'call', data: {} })));
    const run = () => new Promise<number[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'limitWorkerProcess.ts')], {
        env: { ...process.env, LIMIT_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue: 'processes', runMs: 6_500 }) },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const running = Promise.all([run(), run()]);
    await waitFor(async () => (await admin.live()).throttles.some((t) => t.name === 'api'), 15_000, 'both processes declared');
    await sleep(1_500);
    const loweredAt = await redisNowMs();
    await admin.setLimits('api', [{ max: 4, window: '1s' }]);
    await sleep(2_000);
    const raisedAt = await redisNowMs();
    await admin.setLimits('api', [{ max: 25, window: '1s' }]);
    const starts = (await running).flat();
    const between = (from: number, to: number) => starts.filter((at) => at >= from && at < to);
    expect(mostInAnyWindow(starts, 1000)).toBeLessThanOrEqual(25);
    expect(mostInAnyWindow(between(0, raisedAt), 1000)).toBeLessThanOrEqual(10);
    expect(mostInAnyWindow(between(loweredAt + 1000, raisedAt), 1000)).toBeLessThanOrEqual(4);
    expect(mostInAnyWindow(between(raisedAt, raisedAt + 10_000), 1000)).toBeGreaterThan(10);
  });

  it('the CLI sets and clears, and refuses limits that can never apply', async () => {
    bed.worker('cli', null, { throttles: [Throttle.named('api').limit(10, '1s')] });
    await waitFor(async () => (await admin.live()).throttles.length > 0, 10_000, 'declared');
    expect(await limitCommand(admin, 'api', null, { set: '5/1s,100/1m', ttl: '1h' })).toBe('throttle api: limits set to 5/1s,100/1m for 1h');
    expect((await admin.throttleStats('api')).limits).toEqual([{ max: 5, windowMs: 1000 }, { max: 100, windowMs: 60_000 }]);
    await expect(limitCommand(admin, 'api', null, { set: '100/1s,50/1m' })).rejects.toThrow(/can never apply/);
    await expect(limitCommand(admin, 'api', null, { set: 'fast' })).rejects.toThrow(/each limit is N\/window/);
    expect(await limitCommand(admin, 'api', null, { clear: true })).toBe('throttle api: back to its declared limits');
    expect((await admin.throttleStats('api')).limits).toEqual([{ max: 10, windowMs: 1000 }]);
  });
});
