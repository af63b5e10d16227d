import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Grantor } from '../src/grant/Grantor';
import { resolveBuckets } from '../src/grant/resolveBuckets';
import { readSlot, tokenSlot } from '../src/grant/windowGeometry';
import { readCounter } from '../src/admin/readCounter';
import { Throttle } from '../src/declarations/Throttle';
import { countLateStartCall } from '../src/lua/calls/countLateStart';
import { ScriptRunner } from '../src/lua/scripts';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { steerableLuaScripts, TestClock } from './support/testClock';

// lua/countLateStart-n.lua moves a started job's tokens to the release a longer lease gives them. Held here to a
// model of the counter's slots: each token in the slot tokenSlot gives for its lease, a slot's release the latest
// of every token ever put there (a removal never makes it earlier), tokens already released left where they are
// and counted again until their later release.
interface ModelSlot { count: number; releaseUs: number }

describe('countLateStart against a model of the window counter', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  const arbWindowMs = fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 300, max: 5_000 }), fc.integer({ min: 5_000, max: 3_600_000 }));
  const arbGrant = fc.record({ gapMs: fc.integer({ min: 0, max: 400 }), late: fc.boolean(), extraMs: fc.integer({ min: 1, max: 2_000 }), afterMs: fc.integer({ min: 0, max: 600 }) });

  it('tokens go where the longer lease puts them; what readCounter counts is what the model holds', async () => {
    await fc.assert(
      fc.asyncProperty(arbWindowMs, fc.constantFrom(0, 7, 40, 250), fc.array(arbGrant, { minLength: 1, maxLength: 6 }), async (windowMs, leaseMs, grants) => {
        const prefix = uniquePrefix('lateStart');
        const clock = new TestClock();
        const grantor = new Grantor({ connection: redis, prefix, leaseMs }, clock.internals());
        const throttle = Throttle.named('api').limit(1_000, windowMs);
        const [{ bucket }] = resolveBuckets([{ throttle }]);
        const key = grantor.keys.windowCounter(throttle.name, bucket, windowMs);
        const runner = new ScriptRunner(redis, steerableLuaScripts());
        const slots = new Map<number, ModelSlot>();
        const put = (k: number, count: number, releaseUs: number) => {
          const slot = slots.get(k);
          slots.set(k, { count: (slot?.count ?? 0) + count, releaseUs: Math.max(slot?.releaseUs ?? 0, releaseUs) });
        };
        let offsetMs = 0;
        let lastUs = 0;
        try {
          for (const grant of grants) {
            clock.advance(grant.gapMs);
            offsetMs += grant.gapMs;
            const { nowUs, results } = await grantor.grantBatch([[{ throttle }]]);
            expect(results[0].granted).toBe(true);
            const from = tokenSlot(windowMs, nowUs, leaseMs);
            put(from.k, 1, from.releaseUs);
            if (!grant.late) continue;
            // The job started afterMs later, extraMs past its lease.
            clock.advance(grant.afterMs);
            offsetMs += grant.afterMs;
            const toLeaseMs = leaseMs + grant.extraMs;
            const call = countLateStartCall({ keys: grantor.keys, grantUs: nowUs, toLeaseMs, windows: [{ name: throttle.name, bucket, windowMs, fromLeaseMs: leaseMs, count: 1 }], rates: [] });
            const [atUs, , missed] = await runner.run(call.name, call.keys, [...call.args, offsetMs]) as number[];
            lastUs = Number(atUs);
            const slot = slots.get(from.k)!;
            // Too late exactly when the slot that counted the token had released it (a grant may have used the room).
            expect(Number(missed)).toBe(toLeaseMs > leaseMs && slot.releaseUs <= lastUs ? 1 : 0);
            if (slot.releaseUs > lastUs) {
              if (slot.count === 1) slots.delete(from.k);
              else slot.count -= 1;
            }
            const to = tokenSlot(windowMs, nowUs, toLeaseMs);
            if (to.releaseUs > lastUs) put(to.k, 1, to.releaseUs);
          }
          const hash = await redis.hgetall(key);
          const { nowUs } = await grantor.grantBatch([]);
          lastUs = Math.max(lastUs, nowUs);
          // Released slots may be swept or not yet: the live ones must agree.
          const live = (all: Map<number, ModelSlot>) => [...all].filter(([, s]) => s.releaseUs > lastUs).sort(([a], [b]) => a - b);
          const written = new Map(Object.entries(hash).filter(([field]) => field !== 'h').map(([field, value]) => [Number(field), readSlot(windowMs, Number(field), Number(value))]));
          expect(live(written)).toEqual(live(slots));
          const counted = live(slots).reduce((n, [, s]) => n + s.count, 0);
          expect(readCounter(hash, 1_000, windowMs, lastUs / 1000).counted).toBe(counted);
        } finally {
          await grantor.close();
          await deleteKeysUnder(redis, prefix);
        }
      }),
      { numRuns: 120 },
    );
  });
});
