import fc from 'fast-check';
import { Redis } from 'ioredis';
import { adaptiveField, PublishedAdaptive } from '../src/declarations/Adaptive';
import { ThrottleKeys } from '../src/keys/ThrottleKeys';
import { adaptLimitInput, runAdaptLimit } from '../src/lua/calls/adaptLimit';
import { ScriptRunner } from '../src/lua/scripts';
import { AdaptiveModel } from './model/adaptiveModel';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { steerableLuaScripts, TestClock } from './support/testClock';

const arbSpec: fc.Arbitrary<PublishedAdaptive> = fc.record({
  ceiling: fc.integer({ min: 1, max: 2_000 }),
  minShare: fc.double({ min: 0, max: 1, noNaN: true }),
  decrease: fc.oneof(fc.constant(0.5), fc.constantFrom(0.01, 0.1, 0.3, 0.75, 0.9, 0.999), fc.double({ min: 0.001, max: 0.999, noNaN: true })),
  increase: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 300 })),
  periodMs: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 200, max: 3_000 })),
  rate: fc.boolean(),
}).map(({ ceiling, minShare, decrease, increase, periodMs, rate }) => ({
  target: rate ? 'r' : String(periodMs), ceiling, min: Math.max(1, Math.floor(ceiling * minShare)), decrease, increase, periodMs,
}));
type Step = { kind: 'advance'; ms: number } | { kind: 'lower' } | { kind: 'read' };
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 100, max: 5_000 })).map((ms): Step => ({ kind: 'advance', ms })) },
  { weight: 3, arbitrary: fc.constant<Step>({ kind: 'lower' }) },
  { weight: 1, arbitrary: fc.constant<Step>({ kind: 'read' }) },
);

// lua/adaptLimit-3.lua (lua/includes/adaptiveLimit.lua) against AdaptiveModel, on the Redis clock moved ahead by a
// test clock: every reading and every decrease agree, the live limit stays between min and the ceiling, and a
// decrease comes at most once a period.
describe('adaptive limits against the reference model', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('agree reading by reading and decrease by decrease', async () => {
    await fc.assert(fc.asyncProperty(arbSpec, fc.array(arbStep, { minLength: 1, maxLength: 30 }), async (spec, steps) => {
      const prefix = uniquePrefix('adaptive-prop');
      const keys = new ThrottleKeys(prefix);
      const clock = new TestClock();
      const runner = new ScriptRunner(redis, steerableLuaScripts(), () => clock.internals().extraArgs!());
      const model = new AdaptiveModel(spec);
      const call = adaptLimitInput(keys, 'partner', 'b', false);
      try {
        await redis.hset(call.limits, 'a', adaptiveField(spec));
        // The scripts' clock runs with Redis's, moved ahead by the steps: never behind it, so a key Redis lets expire
        // (on its own clock) has expired by the model's time too. Each call's time is the one its reply gives.
        let lastDecreaseMs = -Infinity;
        for (const step of steps) {
          if (step.kind === 'advance') {
            clock.advance(step.ms);
            continue;
          }
          const reply = await runAdaptLimit(runner, { ...call, lower: step.kind === 'lower' });
          if (!reply.adaptive) throw new Error('the published adaptive limit was not read');
          const nowMs = reply.nowMs;
          const expected = step.kind === 'lower' ? model.lower(nowMs) : { before: model.live(nowMs), after: model.live(nowMs), changed: false };
          expect({ before: reply.before, after: reply.after, changed: reply.changed, ceiling: reply.ceiling, min: reply.min })
            .toEqual({ ...expected, ceiling: spec.ceiling, min: spec.min });
          expect(reply.loweredAtMs).toBe(model.loweredAt(nowMs));
          expect(reply.after).toBeGreaterThanOrEqual(spec.min);
          expect(reply.after).toBeLessThanOrEqual(spec.ceiling);
          if (reply.changed) {
            expect(nowMs - lastDecreaseMs).toBeGreaterThanOrEqual(spec.periodMs);
            lastDecreaseMs = nowMs;
          }
        }
      } finally {
        await deleteKeysUnder(redis, prefix);
      }
    }), { numRuns: 150 });
  });
});
