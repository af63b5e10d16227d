import fc from 'fast-check';
import { Redis } from 'ioredis';
import { ThrottleKeys } from '../src';
import { leaseTokens, renewHolds } from '../src/delivery/leased/grantorCalls';
import { ScriptRunner } from '../src/lua/scripts';
import { runPublishLimits } from '../src/lua/calls/publishLimits';
import { ReplicaConfirmation } from '../src/redis/ReplicaConfirmation';
import { deleteKeysUnder, newRedis, uniquePrefix } from './support/redis';
import { steerableLuaScripts } from './support/testClock';

/**
 * The grantor's side of concurrency in leased delivery (lua/leaseTokens-1.lua, lua/renewHolds-1.lua) held to a model,
 * decision by decision, on a steerable clock. Workers ask for deliveries of a cost (using their free units first),
 * end jobs, renew or give back units, and go silent (their holds lapse). After every grant:
 * - it grants exactly what fits: the most deliveries whose units fit in n less every live hold, plus the asker's
 *   free units (never more: at most n units held by live holds; never less: a delivery that fits is not refused);
 * - the units it adds to the asker's hold are what those deliveries need beyond its free units.
 */
const N = 6;
const HOLD_MS = 1000;
const WORKERS = ['w1', 'w2', 'w3'];
const BUCKET = 'crawl=-';

type Step =
  | { kind: 'grant'; worker: number; count: number; cost: number }
  | { kind: 'end'; worker: number; units: number }
  | { kind: 'renew'; worker: number; giveBack: boolean }
  | { kind: 'tick'; ms: number };

const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('grant' as const), worker: fc.nat(WORKERS.length - 1), count: fc.integer({ min: 1, max: 4 }), cost: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('end' as const), worker: fc.nat(WORKERS.length - 1), units: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('renew' as const), worker: fc.nat(WORKERS.length - 1), giveBack: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(50, 400, HOLD_MS + 200) }) },
);

/** A worker as the grantor should see it: its hold (units, and when it lapses on the grantor's clock) and its units in use. */
interface ModelWorker { held: number; inUse: number; lapsesAtMs: number }

describe('concurrency holds, property (grantor scripts against a model)', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('a grant takes exactly what fits beside the live holds, and a lapsed hold counts nothing', async () => {
    await fc.assert(fc.asyncProperty(fc.array(arbStep, { minLength: 5, maxLength: 40 }), async (steps) => {
      const prefix = uniquePrefix('hprop');
      const keys = new ThrottleKeys(prefix);
      let offsetMs = 0;
      const runner = new ScriptRunner(redis, steerableLuaScripts(), () => [offsetMs]);
      const grantor = { runner, slotKey: keys.registryVersion, throttlePrefix: keys.throttlePrefix, confirmation: new ReplicaConfirmation(() => keys.grantorRecord) };
      try {
        // The throttle's limits as a worker publishes them (lua/publishLimits-n.lua): concurrency n, nothing else.
        await runPublishLimits(runner, { ttlMs: 60_000, registryVersion: 1, force: false, throttles: [{ limitsKey: keys.effectiveLimits('crawl'), limits: [{ kind: 'concurrency', n: N }], rateLeaseMs: 0 }] });
        const workers = WORKERS.map((): ModelWorker => ({ held: 0, inUse: 0, lapsesAtMs: 0 }));
        const alive = (w: ModelWorker, nowMs: number) => w.held > 0 && w.lapsesAtMs > nowMs;
        for (const step of steps) {
          if (step.kind === 'tick') {
            offsetMs += step.ms;
            continue;
          }
          const w = workers[step.worker];
          if (step.kind === 'end') {
            w.inUse -= Math.min(w.inUse, step.units);
            continue;
          }
          if (step.kind === 'renew') {
            if (w.held === 0) continue;
            const units = step.giveBack ? w.inUse : w.held;
            const { nowMs, lapsed } = await renewHolds(grantor, WORKERS[step.worker], HOLD_MS, [[BUCKET, units, w.inUse]]);
            // A lapsed hold holds again only what is in use (the rest may be others' by now).
            expect(lapsed.length > 0).toBe(units > 0 && w.lapsesAtMs <= nowMs);
            w.held = lapsed.length > 0 ? w.inUse : units;
            w.lapsesAtMs = nowMs + HOLD_MS;
            continue;
          }
          // A grant: the worker's free units go first (while its hold lives; a worker whose hold lapsed has none).
          const asker = { queueId: `${prefix}:q`, leaseMs: 100, durableRedis: false, holder: WORKERS[step.worker], holdMs: HOLD_MS, credit: [[BUCKET, w.held - w.inUse] as const].filter(([, u]) => u > 0), knownNodeId: '' };
          const answer = await leaseTokens(grantor, asker, [{ member: `g/${BUCKET}`, buckets: [step.cost === 1 ? BUCKET : `${BUCKET}$${step.cost}`], count: step.count, refill: false }]);
          expect(answer.status).toBe('decided');
          const nowMs = Math.floor(answer.grantUs / 1000);
          for (const other of workers) {
            // Lapsed before this grant: as the scripts see it, it holds nothing (its jobs are counted again only by a renewal).
            if (other.held > 0 && other.lapsesAtMs <= nowMs) {
              other.held = 0;
              other.inUse = 0;
            }
          }
          const credit = alive(w, nowMs) ? w.held - w.inUse : 0;
          const live = workers.reduce((sum, other) => sum + (alive(other, nowMs) ? other.held : 0), 0);
          const expected = Math.min(step.count, Math.floor((N - live + credit) / step.cost));
          const { granted, held } = answer.results[0];
          expect({ step, live, credit, granted }).toEqual({ step, live, credit, granted: Math.max(0, expected) });
          const used = granted * step.cost;
          const added = Math.max(0, used - credit);
          expect(held.reduce((sum, [, units]) => sum + units, 0)).toBe(added);
          if (added > 0) w.lapsesAtMs = nowMs + HOLD_MS;
          w.held += added;
          w.inUse += used;
          expect(workers.reduce((sum, other) => sum + (alive(other, nowMs) ? other.held : 0), 0)).toBeLessThanOrEqual(N);
        }
      } finally {
        await deleteKeysUnder(redis, prefix);
      }
    }), { numRuns: 60 });
  });
});
