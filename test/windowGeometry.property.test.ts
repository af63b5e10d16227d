import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Grantor } from '../src/grant/Grantor';
import { resolveBuckets } from '../src/grant/resolveBuckets';
import { readSlot, tokenSlot } from '../src/grant/windowGeometry';
import { readCounter } from '../src/admin/readCounter';
import { Throttle } from '../src/declarations/Throttle';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { TestClock } from './support/testClock';

// The window geometry is stated once in TypeScript (src/grant/windowGeometry.ts) and once in Lua
// (lua/includes/windowCounter.lua, which writes the counters). Here the Lua's writes are read back with the
// TypeScript's geometry, field by field, over windows from 1 ms to a week: the admin's reader, the benchmarks
// and the reference model all read with it.
describe('window geometry: the counters lua/includes/windowCounter.lua writes are where src/grant/windowGeometry.ts puts them', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  const arbWindowMs = fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 300, max: 120_000 }), fc.integer({ min: 120_000, max: 7 * 86_400_000 }));

  it('each grant lands in the slot, with the release offset, that tokenSlot gives; readCounter counts it until then', async () => {
    await fc.assert(
      fc.asyncProperty(arbWindowMs, fc.constantFrom(0, 7, 40, 1_500), fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 4 }), async (windowMs, leaseMs, gapsMs) => {
        const prefix = uniquePrefix('geometry');
        const clock = new TestClock();
        const grantor = new Grantor({ connection: redis, prefix, leaseMs }, clock.internals());
        const throttle = Throttle.named('geometry').limit(100, windowMs);
        const [{ bucket }] = resolveBuckets([{ throttle }]);
        const key = grantor.keys.windowCounter(throttle.name, bucket, windowMs);
        // What the slots should hold: each token in its slot, a slot's release the latest of its tokens'.
        const expected = new Map<number, { count: number; releaseUs: number }>();
        try {
          for (const gapMs of gapsMs) {
            clock.advance(gapMs);
            const { nowUs, results } = await grantor.grantBatch([[{ throttle }]]);
            expect(results[0].granted).toBe(true);
            const { k, releaseUs } = tokenSlot(windowMs, nowUs, leaseMs);
            const slot = expected.get(k);
            expected.set(k, { count: (slot?.count ?? 0) + 1, releaseUs: Math.max(slot?.releaseUs ?? 0, releaseUs) });
          }
          const hash = await redis.hgetall(key);
          const written = new Map(Object.entries(hash).filter(([field]) => field !== 'h').map(([field, value]) => [Number(field), readSlot(windowMs, Number(field), Number(value))]));
          // Released slots may be swept (or not yet): compare the live ones.
          const nowMs = Math.max(...[...expected.values()].map((s) => s.releaseUs)) / 1000 - windowMs - leaseMs;
          const live = (slots: Map<number, { count: number; releaseUs: number }>) => [...slots].filter(([, s]) => s.releaseUs > nowMs * 1000).sort(([a], [b]) => a - b);
          expect(live(written)).toEqual(live(expected));
          const counted = live(expected).reduce((n, [, s]) => n + s.count, 0);
          expect(readCounter(hash, 100, windowMs, nowMs).counted).toBe(counted);
        } finally {
          // Closed before the next run: its check for a gather runs on the test's client.
          await grantor.close();
          await deleteKeysUnder(redis, prefix);
        }
      }),
      { numRuns: 150 },
    );
  });
});
