import { freeLoopbackPort } from '../../src/devRedis/localRedisServer';
import { testRedisUrl } from '../support/testRedis';
import { CliScenario, DELIVERED, HELD, startScenario } from './scenario';
import { cli, Run } from '../support/runCli';

function expectOneErrorLine(run: Run, pattern: RegExp): void {
  expect(run.code).toBe(1);
  const lines = run.stderr.split('\n').filter((l) => l.length > 0);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^bullmq-throttle: /);
  expect(lines[0]).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stdout).toBe('');
}

describe('the bullmq-throttle CLI, run as a process', () => {
  let s: CliScenario;
  let global: string[];
  beforeAll(async () => {
    // Each CLI run starts a process (about 2 s on a loaded machine): the file can outlast a minute, and with 2 per
    // 1m acme's bucket would refill before the last test (CI: 118 waiting, not 120).
    s = await startScenario('cli-e2e', '1h');
    global = ['--redis', testRedisUrl(), '--prefix', s.prefix];
  });
  afterAll(async () => { await s?.close(); });

  it('stats prints the table', async () => {
    const run = await cli(['stats', 'orders', ...global]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`completed ${DELIVERED}`);
    expect(run.stdout).toContain(`${HELD} jobs held: ${HELD} on full buckets`);
    expect(run.stdout).toMatch(/^per-customer +2 per 1h +Key\.data\("customer"\) +shared bucket +2 workers +-$/m);
  });

  it('stats --json prints QueueStats; REDIS_URL is the default Redis and global options go before the command too', async () => {
    const run = await cli(['--prefix', s.prefix, '--json', 'stats', 'orders'], { env: { REDIS_URL: testRedisUrl() } });
    expect(run.code).toBe(0);
    const stats = JSON.parse(run.stdout);
    expect(stats).toMatchObject({ queue: 'orders', throttled: HELD, heldByFullBuckets: HELD, throttledWorkers: 2, plainWorkers: 0 });
    expect(stats.counts.completed).toBe(DELIVERED);
    expect(stats.throttles.map((t: { name: string }) => t.name)).toEqual(['emails', 'everything', 'per-customer']);
  });

  it('throttle --top 2', async () => {
    const run = await cli(['throttle', 'per-customer', '--top', '2', ...global]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('5 active, 4 at their limit');
    expect(run.stdout).toContain('top waiting buckets (up to 2)');
    expect(run.stdout).toMatch(/^ {2}acme +120$/m);
    expect(run.stdout.split('\n').filter((l) => /^ {2}(b1|json:7) +1$/.test(l))).toHaveLength(1);
  });

  it('bucket, with a string key and a json: number key', async () => {
    const acme = await cli(['bucket', 'per-customer', 'acme', ...global]);
    expect(acme.code).toBe(0);
    expect(acme.stdout).toMatch(/^bucket acme of throttle per-customer$/m);
    expect(acme.stdout).toMatch(/^ {2}2 per 1h +2 \/ 2 +full, room in /m);
    expect(acme.stdout).toContain('120 jobs held on this bucket');
    const seven = await cli(['bucket', 'per-customer', 'json:7', '--json', ...global]);
    expect(seven.code).toBe(0);
    expect(JSON.parse(seven.stdout)).toMatchObject({ key: [7], waiting: 1, limits: [{ counted: 2, max: 2 }] });
  });

  it('bucket --help documents json: key values', async () => {
    const run = await cli(['bucket', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('json:42');
    expect(run.stdout).toContain('missing the key');
  });

  it('an unknown queue: exit 1 and one line on stderr', async () => {
    expectOneErrorLine(await cli(['stats', 'no-such-queue', ...global]), /queue 'no-such-queue' has no jobs and no ThrottledWorker/);
  });

  it('an unknown throttle, and bad arguments: exit 1 and one line', async () => {
    expectOneErrorLine(await cli(['throttle', 'no-such-throttle', ...global]), /throttle 'no-such-throttle' is not declared/);
    expectOneErrorLine(await cli(['throttle', 'per-customer', '--top', 'lots', ...global]), /--top must be a whole number/);
    expectOneErrorLine(await cli(['bucket', 'per-customer', 'json:{}', ...global]), /key value 'json:\{\}' must be a JSON number, boolean or string/);
    expectOneErrorLine(await cli(['stats', ...global]), /missing required argument 'queue'/);
  });

  it('a write to a throttle nobody declares (a typo) is refused, naming the nearest; --force writes it anyway', async () => {
    expectOneErrorLine(await cli(['pause', 'per-custmoer', ...global]), /throttle 'per-custmoer' is not declared .* Did you mean 'per-customer'\? To pause it anyway, .* add --force\.$/);
    expectOneErrorLine(await cli(['limit', 'emials', '--set', '5/1s', ...global]), /throttle 'emials' is not declared .* Did you mean 'emails'\? To set the limits of it anyway/);
    expectOneErrorLine(await cli(['resume', 'zzz', ...global]), /throttle 'zzz' is not declared .* Known throttles: emails, everything, per-customer\.$/);
    expectOneErrorLine(await cli(['stats', 'order', ...global]), /queue 'order' has no jobs .* Did you mean 'orders'\?$/);
    const forced = await cli(['pause', 'not-yet-declared', '--for', '297s', '--force', ...global]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/^throttle not-yet-declared paused for 4m 57s, until /);
    expect((await cli(['resume', 'not-yet-declared', ...global])).stdout).toMatch(/1 pause lifted/);
  });

  it('Redis down: exit 1 and one line, no stack trace', async () => {
    const port = await freeLoopbackPort();
    const started = Date.now();
    expectOneErrorLine(await cli(['stats', 'orders', '--redis', `redis://127.0.0.1:${port}`]), new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: connect ECONNREFUSED`));
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('watch --json prints one JSON line per refresh and exits 0 on SIGINT', async () => {
    const run = await cli(['watch', 'orders', '--json', ...global], {
      whileRunning: async (child, out) => {
        const deadline = Date.now() + 20_000;
        const started = Date.now();
        // About 2.5 s, and at least until two refreshes are out (so the SIGINT handler is surely in place).
        while ((Date.now() - started < 2500 || out().split('\n').filter(Boolean).length < 2) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
        }
        child.kill('SIGINT');
      },
    });
    expect(run.stderr).toBe('');
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const l of lines) {
      const snapshot = JSON.parse(l);
      expect(snapshot.queue.throttled).toBe(HELD);
      expect(snapshot.throttles.find((t: { name: string }) => t.name === 'per-customer').topBuckets[0]).toEqual({ key: ['acme'], waiting: 120 });
    }
    expect(lines[1]).not.toBe(lines[0]); // each line is a new reading (its `at` moves on)
  });

  it('watch without a terminal prints one snapshot per refresh', async () => {
    const run = await cli(['watch', 'orders', '--interval', '300', ...global], {
      whileRunning: async (child, out) => {
        const deadline = Date.now() + 20_000;
        while ((out().match(/^bullmq-throttle watch/gm) ?? []).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        child.kill('SIGINT');
      },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('\x1b[');
    expect((run.stdout.match(/^bullmq-throttle watch/gm) ?? []).length).toBeGreaterThanOrEqual(2);
    expect(run.stdout).toMatch(/^per-customer · 2 per 1h per bucket · /m);
    expect(run.stdout).toMatch(/^ {2}acme +2 per 1h +\[#+\] +2\/2 +120 +2 per 1h$/m);
  });
});
