import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Grantor } from '../src/grant/Grantor';
import { resolveBuckets } from '../src/grant/resolveBuckets';
import { decodeTokenId } from '../src/grant/tokenId';
import { Delivery } from '../src/grant/types';
import { Key } from '../src/declarations/Key';
import { Missing } from '../src/declarations/Missing';
import { Throttle } from '../src/declarations/Throttle';
import { mostInAnyWindow } from '../src/check/mostInAnyWindow';
import { ModelCounterRef, ReferenceModel, slotUs } from './model/referenceModel';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { TestClock } from './support/testClock';
import { ClockStep, clockSteps, moveClock } from './support/grantSteps';

/** Windows of 1 ms slots (under 220 ms) and of wider slots, where rounding a release the wrong way shows most. */
const arbWindow = (largest: number) => fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 200, max: largest }));
/** Random throttle shapes: one or two limits that pass validation, keyed or not, either missing-key policy. */
const arbLimits = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 5 }), arbWindow(1500)).map(([max, windowMs]) => [{ max, windowMs }]),
  fc.tuple(fc.integer({ min: 1, max: 4 }), arbWindow(600), fc.integer({ min: 2, max: 4 }), fc.nat())
    .filter(([max, , factor]) => max * (factor - 1) >= 2)
    .map(([max, windowMs, factor, pick]) => {
      const longMax = max + 1 + (pick % (max * factor - max - 1));
      return [{ max, windowMs }, { max: longMax, windowMs: windowMs * factor }];
    }),
);
const NAMES = ['stripe', 'per:cust{omer}', 'γ spaces %u0041'];
const arbThrottles = fc.array(
  fc.record({ limits: arbLimits, keyed: fc.boolean(), unthrottled: fc.boolean() }),
  { minLength: 1, maxLength: 3 },
).map((shapes) => shapes.map((shape, i) => {
  let throttle = Throttle.named(NAMES[i]);
  for (const { max, windowMs } of shape.limits) throttle = throttle.limit(max, windowMs);
  if (shape.keyed) throttle = throttle.key([Key.data('customer')]).whenKeyMissing(shape.unthrottled ? Missing.Unthrottled : Missing.SharedBucket);
  return throttle;
}));

const KEY_VALUES = ['acme', 'a:{b}', 1, null] as const;
type Step = { kind: 'grant'; deliveries: { throttle: number; key: number; cost: number }[][] } | ClockStep;
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.array(fc.array(fc.record({ throttle: fc.nat(2), key: fc.nat(3), cost: fc.oneof(fc.constant(1), fc.constant(1), fc.integer({ min: 1, max: 3 })) }), { maxLength: 3 }), { minLength: 1, maxLength: 4 }).map((deliveries): Step => ({ kind: 'grant', deliveries })) },
  ...clockSteps<Step>(25, 1600),
);

interface Token { grantUs: number; returned: boolean; count: number }

describe('grant and return scripts against the reference model', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('agree decision by decision, never exceed N in any window of W + h, and never refuse without N counted', async () => {
    await fc.assert(
      fc.asyncProperty(arbThrottles, fc.constantFrom(0, 0, 7, 40), fc.array(arbStep, { minLength: 1, maxLength: 40 }), async (throttles, leaseMs, steps) => {
        const prefix = uniquePrefix('prop');
        const clock = new TestClock();
        const grantor = new Grantor({ connection: redis, prefix, leaseMs }, clock.internals());
        const model = new ReferenceModel(leaseMs);
        const tokensByCounter = new Map<string, Token[]>();
        const refsByCounter = new Map<string, ModelCounterRef>();
        const granted: { id: string; tokens: Map<string, Token> }[] = [];
        let lastNowMs = 0;
        let lastRetryAt = 0;
        try {
          for (const step of steps) {
            if (step.kind === 'advance' || step.kind === 'untilRoom') {
              moveClock(step, clock, lastRetryAt, lastNowMs);
            } else if (step.kind === 'grant') {
              // Each bucket once per delivery (one named twice takes both costs: summed, they might never fit).
              const bucketOfPick = (pick: { throttle: number; key: number }) => `${pick.throttle}/${throttles[pick.throttle]?.keyParts ? KEY_VALUES[pick.key] : ''}`;
              const deliveries: Delivery[] = step.deliveries.map((picks) => picks
                .filter((pick) => pick.throttle < throttles.length)
                .filter((pick, i, all) => all.findIndex((other) => bucketOfPick(other) === bucketOfPick(pick)) === i)
                .map((pick) => ({
                  throttle: throttles[pick.throttle], key: throttles[pick.throttle].keyParts ? [KEY_VALUES[pick.key]] : undefined,
                  // A cost no limit of the throttle could ever grant is refused before Redis (a test of its own).
                  cost: Math.min(pick.cost, ...throttles[pick.throttle].limits.map((limit) => limit.max)),
                })));
              const refs = deliveries.map((delivery) => resolveBuckets(delivery).flatMap(({ throttle, bucket, cost }) =>
                throttle.limits.map((limit) => ({ key: grantor.keys.windowCounter(throttle.name, bucket, limit.windowMs), max: limit.max, windowMs: limit.windowMs, cost }))));
              const { nowUs, results } = await grantor.grantBatch(deliveries);
              const expected = model.grant(nowUs, refs);
              lastNowMs = nowUs / 1000;
              for (const r of results) if (!r.granted) lastRetryAt = r.retryAt;
              expect(results.map((r) => (r.granted ? 0 : r.retryAt))).toEqual(expected);
              results.forEach((result, i) => {
                if (result.granted) {
                  const tokens = new Map<string, Token>();
                  for (const ref of refs[i]) {
                    // A delivery of cost c is c tokens, granted and returned together.
                    const token = { grantUs: nowUs, returned: false, count: ref.cost };
                    refsByCounter.set(ref.key, ref);
                    tokensByCounter.set(ref.key, [...(tokensByCounter.get(ref.key) ?? []), token]);
                    tokens.set(ref.key, token);
                  }
                  granted.push({ id: result.id, tokens });
                  return;
                }
                // Refused: some limit of the delivery really holds N live tokens granted within W + h + one slot.
                const justified = refs[i].some((ref) => {
                  const horizonUs = nowUs - (ref.windowMs + leaseMs) * 1000 - slotUs(ref.windowMs);
                  const live = (tokensByCounter.get(ref.key) ?? []).filter((t) => !t.returned && t.grantUs > horizonUs);
                  return live.reduce((n, t) => n + t.count, 0) + ref.cost > ref.max;
                });
                expect(justified).toBe(true);
                expect(result.retryAt).toBeGreaterThanOrEqual(Math.floor(nowUs / 1000));
              });
            } else if (granted.length > 0) {
              const { id, tokens } = granted[step.pick % granted.length];
              const { nowUs, returned } = await grantor.returnBatch([id]);
              const token = decodeTokenId(id);
              token.throttles.forEach((group, g) => {
                const groupRefs = group.windows.map((windowMs) => ({ key: grantor.keys.windowCounter(group.name, group.bucket, windowMs), windowMs }));
                const verdict = model.returnToken(nowUs, grantor.keys.returnedTokens(group.name), token.nonce, token.grantUs, token.leaseMs, groupRefs, group.count ?? 1);
                expect(returned[g]).toBe(verdict === 1);
                if (verdict === 1) for (const ref of groupRefs) tokens.get(ref.key)!.returned = true;
              });
            }
            for (const [key, tokens] of tokensByCounter) {
              const ref = refsByCounter.get(key)!;
              const delivered = tokens.filter((t) => !t.returned).flatMap((t) => Array.from({ length: t.count }, () => t.grantUs));
              expect(mostInAnyWindow(delivered, (ref.windowMs + leaseMs) * 1000)).toBeLessThanOrEqual(ref.max);
            }
          }
        } finally {
          // Closed before the next run: its check for a gather runs on the test's client.
          await grantor.close();
          await deleteKeysUnder(redis, prefix);
        }
      }),
      { numRuns: 600 },
    );
  });
});
