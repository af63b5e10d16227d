import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Rate } from '../../src/declarations/Rate';
import { rateShareKept, rateStartDeadlineMs } from '../../src/declarations/validateLimits';
import { START_DEADLINE_CEILING_MS } from '../../src/options/defaults';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';
import { WorkerTestBed } from '../support/bullmq';
import { worstRateExcess } from '../model/rateModel';

// Rates held across worker processes (real child processes) and queues, in exact delivery (one Redis).
type Delivered = { processedOn: number; startedAt: number; customer: string; units?: number };

/** processedOn is whole ms of the grant's us: a span read from it may be up to 1 ms short of the grants'. */
function excessWithMsTimes(times: readonly number[], rate: Rate): number {
  return worstRateExcess(times.map((ms) => ms * 1000), rate) - (1000 * rate.n) / (rate.perMs * 1000);
}

type Run = { deliveries: Delivered[]; putBack: number; countedTooLate: number };

/**
 * The starts' excess over the rate, at most what the workers said of late starts counted too late: a process
 * paused longer than the rate's interval between a start check and its count (a CI run with every core busy
 * once saw 0.14 of a token over a rate of 20/s, burst 1), which adds at most each such start's tokens.
 */
function expectStartsWithin(runs: readonly Run[], times: readonly number[], rate: Rate, costOfEach = 1): void {
  const tooLate = runs.reduce((sum, r) => sum + r.countedTooLate, 0);
  const excess = excessWithMsTimes(times, rate);
  if (tooLate > 0) process.stderr.write(`rate ${rate.n}/${rate.perMs} ms: ${tooLate} late start(s) counted too late, starts' excess ${excess.toFixed(3)}\n`);
  expect(excess).toBeLessThanOrEqual(tooLate * costOfEach);
}

describe('rate(n, per, { burst }) across processes', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('rate');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  const run = (queue: string, config: object) => new Promise<Run>((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'rateWorkerProcess.ts')], {
      env: { ...process.env, RATE_WORKER: JSON.stringify({ url: testRedisUrl(), prefix: bed.prefix, queue, ...config }) },
      maxBuffer: 64 << 20,
    }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
  });

  it('saturated by 3 processes on 2 queues: never more than burst + n·t/per in any t, and at least 95% of n/per sustained', async () => {
    const shared = { n: 40, per: '1s', burst: 8 };
    const a = bed.queue('rate-a');
    const b = bed.queue('rate-b');
    const jobs = (count: number) => Array.from({ length: count }, (_, i) => ({ name: 'send', data: { customer: `c${i % 3}` } }));
    await a.addBulk(jobs(400));
    await b.addBulk(jobs(400));
    const config = { runMs: 5_000, concurrency: 10, shared };
    const runs = await Promise.all([run('rate-a', config), run('rate-a', config), run('rate-b', config)]);
    const all = runs.flatMap((r) => r.deliveries);
    const putBack = runs.reduce((sum, r) => sum + r.putBack, 0);
    const times = all.map((d) => d.processedOn).sort((x, y) => x - y);
    const rate = { n: shared.n, perMs: 1000, burst: shared.burst };
    expect(excessWithMsTimes(times, rate)).toBeLessThanOrEqual(0);
    expectStartsWithin(runs, all.map((d) => d.startedAt), rate);
    // Past the first burst, deliveries follow n/per: the sustained share of it, on the Redis clock. The first
    // burst is granted short of what processors may start meanwhile (their start deadline, 100 ms at most here).
    const firstBurst = shared.burst - (shared.n * rateStartDeadlineMs(rate, START_DEADLINE_CEILING_MS)) / 1000;
    const spanMs = times[times.length - 1] - times[0];
    // The rate grants at n/per; a job put back for starting late wasted the token it was granted (rates keep
    // what they grant): granted, the deliveries and those, must reach 95% (a saturation check: 99.98% alone, 98.1%
    // on bullmq 5.81 in a CI rehearsal with every core busy; the figure is printed).
    const sustained = (times.length + putBack - firstBurst) / ((spanMs * shared.n) / 1000);
    process.stderr.write(`rate 40/s burst 8, 3 processes, 2 queues: ${times.length} deliveries and ${putBack} put back in ${spanMs} ms, granted ${(100 * sustained).toFixed(2)}% of n/per\n`);
    expect(sustained).toBeGreaterThanOrEqual(0.95);
  });

  it('a rate of burst 1 (evenly spaced, the default) holds at processor start too, at a twentieth of T less', async () => {
    const queue = bed.queue('rate-even');
    await queue.addBulk(Array.from({ length: 40 }, () => ({ name: 'send', data: { customer: 'c0' } })));
    const shared = { n: 2, per: '1s', burst: 1 };
    const config = { runMs: 4_000, concurrency: 4, shared };
    const runs = await Promise.all([run('rate-even', config), run('rate-even', config)]);
    const all = runs.flatMap((r) => r.deliveries);
    const rate = { n: 2, perMs: 1000, burst: 1 };
    // T = 500 ms: the start deadline kept on the rate is 25 ms, so grants go 525 ms apart.
    expect(rateStartDeadlineMs(rate, START_DEADLINE_CEILING_MS)).toBe(25);
    expect(excessWithMsTimes(all.map((d) => d.processedOn), rate)).toBeLessThanOrEqual(0);
    expectStartsWithin(runs, all.map((d) => d.startedAt), rate);
    const times = all.map((d) => d.processedOn).sort((x, y) => x - y);
    const putBack = runs.reduce((sum, r) => sum + r.putBack, 0);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    process.stderr.write(`rate 2/s burst 1, 2 processes: ${times.length} deliveries, ${putBack} put back, gaps ${gaps.join(' ')} ms\n`);
    expect(times.length + putBack).toBeGreaterThanOrEqual(6);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(524);
  });

  it('a rate of burst 1 faster than 5 per second holds at processor start too, granted per/n + 10 ms apart', async () => {
    const queue = bed.queue('rate-fast-even');
    await queue.addBulk(Array.from({ length: 200 }, () => ({ name: 'send', data: { customer: 'c0' } })));
    const shared = { n: 20, per: '1s', burst: 1 };
    const config = { runMs: 3_000, concurrency: 8, shared };
    const runs = await Promise.all([run('rate-fast-even', config), run('rate-fast-even', config)]);
    const all = runs.flatMap((r) => r.deliveries);
    const rate = { n: 20, perMs: 1000, burst: 1 };
    // T = 50 ms: its burst covers no deadline, so processors start within 10 ms of their grant and the grants go
    // 60 ms apart: 5/6 of the rate (the worker says so in a warning, with the burst that would keep all of it).
    expect(rateStartDeadlineMs(rate, START_DEADLINE_CEILING_MS)).toBe(10);
    expect(rateShareKept(rate, 10)).toBeCloseTo(50 / 60, 9);
    expect(excessWithMsTimes(all.map((d) => d.processedOn), rate)).toBeLessThanOrEqual(0);
    expectStartsWithin(runs, all.map((d) => d.startedAt), rate);
    const times = all.map((d) => d.processedOn).sort((x, y) => x - y);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    process.stderr.write(`rate 20/s burst 1, 2 processes: ${times.length} deliveries, ${runs.reduce((sum, r) => sum + r.putBack, 0)} put back, least gap ${Math.min(...gaps)} ms\n`);
    // Put-backs spend a rate's token (it keeps what it grants): under load most of the 50 grants may go so.
    expect(times.length).toBeGreaterThanOrEqual(5);
    // processedOn is whole ms of grants 60 ms apart (50 ms when the rate was kept at processedOn only).
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(59);
  });

  it('a rate with a cost holds at processor start by tokens, and a job may still take the whole burst', async () => {
    const queue = bed.queue('rate-costed');
    const units = [20, 1, 7, 3, 12];
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'send', data: { customer: 'c0', units: units[i % units.length] } })));
    const shared = { n: 100, per: '1s', burst: 20 };
    const config = { runMs: 8_000, concurrency: 8, shared, costed: true };
    const runs = await Promise.all([run('rate-costed', config), run('rate-costed', config)]);
    const all = runs.flatMap((r) => r.deliveries);
    const rate = { n: 100, perMs: 1000, burst: 20 };
    // Granted 100 ms short of its burst (the start deadline), yet a job of 20 goes: its tokens are checked alone
    // (it would fail as costing more than the 10 a grant of several could take), once the bucket idled 100 ms.
    expect(rateStartDeadlineMs(rate, START_DEADLINE_CEILING_MS)).toBe(100);
    const tokens = (at: 'processedOn' | 'startedAt') => all.flatMap((d) => Array<number>(d.units!).fill(d[at]));
    expect(excessWithMsTimes(tokens('processedOn'), rate)).toBeLessThanOrEqual(0);
    expectStartsWithin(runs, tokens('startedAt'), rate, Math.max(...units));
    const whole = all.filter((d) => d.units === 20).length;
    process.stderr.write(`rate 100/s burst 20 by cost, 2 processes: ${all.length} jobs (${whole} of cost 20), ${tokens('startedAt').length} tokens\n`);
    // Each job once: cheaper jobs of the bucket go first while it is saturated (a costly job waits for it to
    // idle: open, issue 30), then the eight of cost 20, about 300 ms apart.
    expect(all).toHaveLength(40);
    expect(whole).toBe(8);
  });

  it('a keyed rate holds per bucket while the shared one holds for all, under random processing times', async () => {
    const queue = bed.queue('rate-keyed');
    await queue.addBulk(Array.from({ length: 600 }, (_, i) => ({ name: 'send', data: { customer: `c${i % 4}` } })));
    const shared = { n: 60, per: '1s', burst: 10 };
    const perCustomer = { n: 12, per: '1s', burst: 3 };
    const config = { runMs: 4_000, concurrency: 8, shared, perCustomer, processMs: 30 };
    const runs = await Promise.all([run('rate-keyed', config), run('rate-keyed', config)]);
    const all = runs.flatMap((r) => r.deliveries);
    expect(excessWithMsTimes(all.map((d) => d.processedOn), { n: 60, perMs: 1000, burst: 10 })).toBeLessThanOrEqual(0);
    expectStartsWithin(runs, all.map((d) => d.startedAt), { n: 60, perMs: 1000, burst: 10 });
    for (const customer of ['c0', 'c1', 'c2', 'c3']) {
      const mine = all.filter((d) => d.customer === customer);
      expect(mine.length).toBeGreaterThan(20);
      expect(excessWithMsTimes(mine.map((d) => d.processedOn), { n: 12, perMs: 1000, burst: 3 })).toBeLessThanOrEqual(0);
      expectStartsWithin(runs, mine.map((d) => d.startedAt), { n: 12, perMs: 1000, burst: 3 });
    }
  });
});
