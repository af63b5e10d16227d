import fc from 'fast-check';
import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Cost, Key, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { parseTakeReply, takeNextJobsCall } from '../../src/lua/calls/takeNextJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { connectionFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { steerableLuaScripts } from '../support/testClock';

const GROUPS = ['a', 'b', 'c'] as const;
const MAX_COST = 3;
const arbJobs = fc.array(fc.record({ group: fc.constantFrom(...GROUPS), cost: fc.integer({ min: 1, max: MAX_COST }) }), { minLength: 6, maxLength: 40 });

// lua/includes/fairness.lua through the delivery script, on a clock the test moves: one delivery per window (the
// throttle binds), jobs of three groups with random weights and costs added in any order. Start-time fair queuing's
// bound: over any stretch from the start while two groups both still have jobs held, the service each got (in cost
// units) divided by its weight differs by at most one job's most cost over each weight. And it is work-conserving:
// each call with room delivers while jobs wait.
describe('fair shares, through the delivery script', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('keep every pair of backlogged groups within one dearest job of their weighted shares, and never idle', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({ a: fc.integer({ min: 1, max: 4 }), b: fc.integer({ min: 1, max: 4 }), c: fc.integer({ min: 1, max: 4 }) }), arbJobs,
      async (weights, jobs) => {
        const prefix = uniquePrefix('fair-prop');
        const worker = new ThrottledWorker('q', null, {
          connection: connectionFor(), prefix, leaseMs: 0,
          fairness: { key: Key.data('group'), weights },
          throttles: [Throttle.named('api').cost(Cost.data('cost')).limit(MAX_COST, 1_000)],
        });
        const queue = new Queue('q', { connection: connectionFor(), prefix });
        try {
          await worker.waitUntilReady();
          await queue.addBulk(jobs.map((job, i) => ({ name: `j${i}`, data: job })));
          const q = new ThrottleKeys(prefix).queue('q');
          const runner = new ScriptRunner(redis, steerableLuaScripts());
          const gen = (await redis.hget(q.state, 'gen'))!;
          let token = 0;
          const take = async (slots: number, offsetMs: number) => {
            const spec = takeNextJobsCall({
              bullmqKeys: new QueueKeys(prefix).getKeys('q'), queueKeys: q, throttlePrefix: new ThrottleKeys(prefix).throttlePrefix,
              lockDuration: 30_000, leaseMs: 0, workerName: '', gen, durableRedis: false, tokens: Array.from({ length: slots }, () => `t${token++}`),
            });
            const reply = parseTakeReply(await runner.run(spec.name, spec.keys, [...spec.args, offsetMs]) as unknown[]);
            return reply.jobs.map((job) => jobs[Number(String(job.fields[job.fields.findIndex((f, i) => i % 2 === 0 && f === 'name') + 1]).slice(1))]);
          };
          // The first call: what fits the first window goes as it comes, straight from wait; the rest are held, each
          // given its group's turn.
          const first = await take(jobs.length, 0);
          const held: { group: (typeof GROUPS)[number]; cost: number }[] = [];
          for (let call = 1; first.length + held.length < jobs.length; call++) {
            // A window later each call, one slot: room for the dearest job.
            const went = await take(1, call * 1_100);
            // Work-conserving: jobs wait and the window has room for any: one goes.
            expect(went).toHaveLength(1);
            held.push(...went);
          }
          const left = (group: string, upTo: number) => held.slice(upTo).some((d) => d.group === group);
          const served: Record<string, number> = { a: 0, b: 0, c: 0 };
          held.forEach((d, i) => {
            served[d.group] += d.cost;
            for (const g of GROUPS) {
              for (const h of GROUPS) {
                if (g >= h || !left(g, i + 1) || !left(h, i + 1)) continue;
                const gap = Math.abs(served[g] / weights[g] - served[h] / weights[h]);
                expect({ after: i + 1, g, h, gap: gap <= MAX_COST / weights[g] + MAX_COST / weights[h] + 1e-9 }).toEqual({ after: i + 1, g, h, gap: true });
              }
            }
          });
        } finally {
          await worker.close();
          await queue.close();
          await deleteKeysUnder(redis, prefix);
        }
      },
    ), { numRuns: 50 });
  }, 120_000);
});
