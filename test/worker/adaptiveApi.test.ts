import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

// Issue 30's proof for adaptive limits: an API that answers 429 (with Retry-After) above 30 calls in any second, two
// worker processes sharing an adaptive rate declared at 100 a second. The rate follows the 429s down and settles:
// after 20 s, fewer than 5% of calls get a 429 while at least 20 a second succeed. A run of real time (25 s): what is
// measured is how the limit follows an API's clock, not the package's.
describe('an adaptive rate against an API that allows 30 calls a second (two worker processes)', () => {
  const bed = new WorkerTestBed('adaptive-api');
  const redis: Redis = newRedis();
  afterAll(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('settles: after 20 s, under 5% of calls refused and at least 20 a second answered', async () => {
    const queue = bed.queue('partner-calls');
    await queue.addBulk(Array.from({ length: 1_500 }, (_, i) => ({ name: 'call', data: { i } })));
    const runMs = 25_000;
    const startedAt = Date.now();
    const run = () => new Promise<{ at: number; ok: boolean }[]>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'adaptiveApiWorkerProcess.ts')], {
        env: {
          ...process.env,
          ADAPTIVE_API_WORKER: JSON.stringify({
            url: testRedisUrl(), prefix: bed.prefix, queue: 'partner-calls', runMs, apiLimit: 30, apiKey: `${bed.prefix}:api`,
            rate: 100, burst: 2, min: 5, decrease: 0.5, concurrency: 10,
          }),
        },
        maxBuffer: 16 << 20,
      }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
    });
    const calls = (await Promise.all([run(), run()])).flat().sort((a, b) => a.at - b.at);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(runMs);
    const first = calls[0].at;
    const settled = calls.filter((c) => c.at >= first + 20_000 && c.at < first + runMs - 1_000);
    const refused = settled.filter((c) => !c.ok).length;
    const spanS = (settled[settled.length - 1].at - settled[0].at) / 1000;
    const answeredPerS = (settled.length - refused) / spanS;
    const early = calls.filter((c) => c.at < first + 2_000);
    console.log(`adaptive rate against a 30/s API: first 2 s ${early.filter((c) => !c.ok).length}/${early.length} refused; after 20 s ${refused}/${settled.length} refused (${(100 * refused / settled.length).toFixed(1)}%), ${answeredPerS.toFixed(1)} answered a second`);
    expect(refused / settled.length).toBeLessThan(0.05);
    expect(answeredPerS).toBeGreaterThanOrEqual(20);
    // The API did refuse at first: the rate came down because of it.
    expect(early.some((c) => !c.ok)).toBe(true);
  }, 60_000);
});
