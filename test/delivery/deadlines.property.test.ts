import fc from 'fast-check';
import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { mostInAnyWindow } from '../../src/check/mostInAnyWindow';
import { parseTakeReply, takeNextJobsCall } from '../../src/lua/calls/takeNextJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { connectionFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { steerableLuaScripts } from '../support/testClock';

type Step = { kind: 'add'; keys: ('a' | 'b')[] } | { kind: 'advance'; ms: number } | { kind: 'take'; slots: number };
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.array(fc.constantFrom<'a' | 'b'>('a', 'b'), { minLength: 1, maxLength: 5 }).map((keys): Step => ({ kind: 'add', keys })) },
  { weight: 2, arbitrary: fc.oneof(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 200, max: 2_500 })).map((ms): Step => ({ kind: 'advance', ms })) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 4 }).map((slots): Step => ({ kind: 'take', slots })) },
);

// lua/includes/deadlines.lua through the delivery script itself, on a clock the test moves: whatever the order of
// adds, waits and calls, no job is delivered to run at or past its deadline, a call with a slot to spare leaves no
// job past its deadline behind, each job is handed out once (to run, or to be failed), and the window holds for the
// jobs that run (a job handed out to be failed counts nothing).
describe('deadlines on waiting, through the delivery script', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('never deliver to run past a deadline, expire every job due when a slot is free, hand each job out once', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }), fc.constantFrom(200, 1_000), fc.constantFrom(100, 500, 2_000), fc.array(arbStep, { minLength: 3, maxLength: 25 }),
      async (max, windowMs, maxWaitMs, steps) => {
        const prefix = uniquePrefix('deadline-prop');
        const worker = new ThrottledWorker('q', null, {
          connection: connectionFor(), prefix, leaseMs: 0,
          throttles: [Throttle.named('api').key([Key.data('k')]).limit(max, windowMs).maxWait(maxWaitMs)],
        });
        const queue = new Queue('q', { connection: connectionFor(), prefix });
        try {
          await worker.waitUntilReady();
          const q = new ThrottleKeys(prefix).queue('q');
          const bullmqKeys = new QueueKeys(prefix).getKeys('q');
          const runner = new ScriptRunner(redis, steerableLuaScripts());
          const gen = (await redis.hget(q.state, 'gen'))!;
          const deadlinesKey = `${q.base}:deadlines`;
          let offsetMs = 0;
          let token = 0;
          const handedOut = new Map<string, 'run' | 'failed'>();
          const ran: { key: string; at: number }[] = [];
          for (const step of steps) {
            if (step.kind === 'add') {
              await queue.addBulk(step.keys.map((k) => ({ name: k, data: { k } })));
            } else if (step.kind === 'advance') {
              offsetMs += step.ms;
            } else {
              const before = new Map<string, number>();
              const entries = await redis.zrange(deadlinesKey, '0', '-1', 'WITHSCORES');
              for (let i = 0; i < entries.length; i += 2) before.set(entries[i].slice(entries[i].lastIndexOf('#') + 1), Number(entries[i + 1]));
              const tokens = Array.from({ length: step.slots }, () => `t${token++}`);
              const spec = takeNextJobsCall({
                bullmqKeys, queueKeys: q, throttlePrefix: new ThrottleKeys(prefix).throttlePrefix, lockDuration: 30_000, leaseMs: 0,
                workerName: '', gen, durableRedis: false, tokens,
              });
              const reply = parseTakeReply(await runner.run(spec.name, spec.keys, [...spec.args, offsetMs]) as unknown[]);
              for (const job of reply.jobs) {
                const marked = job.fields.findIndex((field, i) => i % 2 === 0 && field === 'thw');
                const failed = marked >= 0 && tokens.includes(String(job.fields[marked + 1]).split('|')[0]);
                expect(handedOut.has(job.id)).toBe(false);
                handedOut.set(job.id, failed ? 'failed' : 'run');
                const deadline = before.get(job.id);
                if (failed) {
                  // Failed only at or past its deadline (one set in this very call is due at once: an estimate).
                  if (deadline !== undefined) expect(deadline).toBeLessThanOrEqual(reply.nowMs);
                } else {
                  // Run only before its deadline.
                  if (deadline !== undefined) expect(deadline).toBeGreaterThan(reply.nowMs);
                  const key = job.fields[job.fields.findIndex((field, i) => i % 2 === 0 && field === 'name') + 1];
                  ran.push({ key: String(key), at: reply.nowMs });
                }
              }
              if (reply.jobs.length < step.slots) {
                // A slot to spare: nothing past its deadline is left behind.
                expect(await redis.zcount(deadlinesKey, '-inf', reply.nowMs)).toBe(0);
              }
            }
          }
          for (const key of ['a', 'b']) expect(mostInAnyWindow(ran.filter((r) => r.key === key).map((r) => r.at), windowMs)).toBeLessThanOrEqual(max);
        } finally {
          await worker.close();
          await queue.close();
          await deleteKeysUnder(redis, prefix);
        }
      },
    ), { numRuns: 40 });
  }, 120_000);
});
