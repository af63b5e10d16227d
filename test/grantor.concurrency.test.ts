import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { mostInAnyWindow } from '../src/check/mostInAnyWindow';
import { DELIVERIES, perCustomer, shared, twoLimits } from './support/hammerProcess';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { testRedisUrl } from './support/testRedis';
import { sustainedRatePerMs } from './support/rates';

const run = promisify(execFile);

describe('several processes hammering the same throttles', () => {
  let redis: Redis;
  const prefix = uniquePrefix('hammer');
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => {
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });

  it('never exceed N in any window, with every bucket saturated', async () => {
    const processes = 3;
    const durationMs = 6000;
    const startAt = Date.now() + 1500;
    const loops = (['A', 'B', 'C', 'A', 'B', 'C', 'C', 'A'] as const).map((kind) => ({ kind }));
    const outputs = await Promise.all(Array.from({ length: processes }, () => run(
      process.execPath,
      ['--import', 'tsx', join(__dirname, 'support', 'hammerProcess.ts')],
      { env: { ...process.env, HAMMER_CONFIG: JSON.stringify({ url: testRedisUrl(), prefix, startAt, durationMs, loops }) }, maxBuffer: 64 << 20 },
    )));
    const grants = outputs.flatMap(({ stdout }) => JSON.parse(stdout) as { kind: keyof typeof DELIVERIES; at: number }[]);
    const times = (kinds: (keyof typeof DELIVERIES)[]) => grants.filter((g) => kinds.includes(g.kind)).map((g) => g.at);

    const buckets = [
      { name: 'shared', limits: shared.limits, times: times(['A', 'B']) },
      { name: 'per-customer a', limits: perCustomer.limits, times: times(['A']) },
      { name: 'per-customer b', limits: perCustomer.limits, times: times(['B']) },
      { name: 'per-customer c', limits: perCustomer.limits, times: times(['C']) },
      { name: 'two-limits', limits: twoLimits.limits, times: times(['C']) },
    ];
    for (const bucket of buckets) {
      for (const limit of bucket.limits) {
        expect(mostInAnyWindow(bucket.times, limit.windowMs)).toBeLessThanOrEqual(limit.max);
      }
    }
    // shared binds A and B (160/s each through per-customer); two-limits' 120/s binds C.
    const sharedRate = sustainedRatePerMs(buckets[0].times, 100) * 1000;
    const twoLimitsRate = sustainedRatePerMs(buckets[4].times, 120) * 1000;
    process.stderr.write(`grants: ${grants.length}; shared ${sharedRate.toFixed(2)}/s of 100/s; two-limits ${twoLimitsRate.toFixed(2)}/s of 120/s\n`);
    // The buckets were saturated, so the bound above was tested at full load. How close the processes come to
    // N/W is a speed figure (printed above; ≥ 99% where the machine is not loaded), not asserted: on 2 loaded
    // cores the three hammering processes themselves fall behind (98.6% in one CI rehearsal).
    expect(sharedRate).toBeGreaterThanOrEqual(0.9 * 100);
    expect(twoLimitsRate).toBeGreaterThanOrEqual(0.9 * 120);
  });
});
