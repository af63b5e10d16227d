import fc from 'fast-check';
import { Job, Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleKeys } from '../src';
import { takeNextJobs } from '../src/delivery/takeNextJobs';
import { ScriptRunner } from '../src/lua/scripts';
import { WorkerTestBed } from './support/bullmq';
import { newRedis } from './support/redis';
import { steerableLuaScripts } from './support/testClock';

/**
 * concurrency(n) held to a model, decision by decision, through the delivery script itself (takeNextJobs) on
 * a steerable clock: jobs are delivered, completed or failed (released as the worker does, or with the release
 * lost), lose their lock (their worker died) and are taken back by a stalled check. After every step:
 * - never more than n of a bucket's jobs between delivery and their end (the model's in flight, which counts
 *   a lockless job still in active);
 * - a delivery that fits is never refused: a call that leaves a slot empty leaves no job of a bucket with room
 *   waiting, unless a job of that bucket ended without its release and no check (at most a second) found it yet.
 */
const N = 2;
const KEYS = ['a', 'b', 'c'];
const CHECK_MS = 1000;

type Step =
  | { kind: 'take'; slots: number }
  | { kind: 'end'; pick: number; how: 'complete' | 'fail' | 'lost' }
  | { kind: 'die'; pick: number }
  | { kind: 'stalled'; pick: number }
  | { kind: 'add'; key: string }
  | { kind: 'tick'; ms: number };

const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('take' as const), slots: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), how: fc.constantFrom('complete' as const, 'complete' as const, 'fail' as const, 'lost' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('die' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stalled' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.constantFrom(...KEYS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(10, 300, CHECK_MS + 1) }) },
);

interface Running { id: string; key: string; token: string; locked: boolean }

describe('concurrency, property (delivery script against a model)', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('never more than n in flight per bucket, and a job that fits is never left waiting', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.constantFrom(...KEYS), { minLength: 3, maxLength: 14 }), fc.array(arbStep, { minLength: 10, maxLength: 45 }), async (initial, steps) => {
      const bed = new WorkerTestBed('cprop');
      try {
        // A worker that never runs registers and publishes the queue's config; the test makes the calls.
        const worker = bed.worker('cprop', null, { autorun: false, throttles: [Throttle.named('crawl').key([Key.data('k')]).concurrency(N)] });
        await worker.waitUntilReady();
        const queue: Queue = bed.queue('cprop');
        const keys = new ThrottleKeys(bed.prefix);
        const queueKeys = keys.queue('cprop');
        const bullmqKeys = new QueueKeys(bed.prefix).getKeys('cprop');
        let offsetMs = 0;
        const runner = new ScriptRunner(redis, steerableLuaScripts(), () => [offsetMs]);
        const releaser = new ScriptRunner(redis);
        const gen = (await redis.hget(queueKeys.state, 'gen'))!;
        const call = { bullmqKeys, queueKeys, throttlePrefix: keys.throttlePrefix, lockDuration: 60_000, leaseMs: 0, workerName: '', gen, durableRedis: false, lateAfterUs: 0 };
        const keyOf = new Map<string, string>();
        const add = async (key: string) => { const job = await queue.add('j', { k: key }); keyOf.set(job.id!, key); };
        for (const key of initial) await add(key);

        const running: Running[] = [];
        // Per bucket, when (test clock, ms) each job left active without its release: the bucket may count it
        // until a check finds it, at most CHECK_MS later (the first look at the full bucket after that).
        const unreleased = new Map<string, number[]>(KEYS.map((key) => [key, []]));
        const finished = new Set<string>();
        let nextToken = 0;
        const counted = async (key: string) => Number((await redis.hget(keys.inFlightCounter('crawl', `s${key}`), '#')) ?? 0);

        for (const step of steps) {
          if (step.kind === 'take') {
            const tokens = Array.from({ length: step.slots }, () => `tok${nextToken++}`);
            const reply = await takeNextJobs(runner, { ...call, tokens });
            for (let i = 0; i < reply.jobs.length; i++) {
              const id = reply.jobs[i].id;
              running.push({ id, key: keyOf.get(id)!, token: tokens[i], locked: true });
            }
            for (const key of KEYS) {
              const inFlight = running.filter((r) => r.key === key).length;
              expect(inFlight).toBeLessThanOrEqual(N);
              // What the counter still holds beyond the jobs in flight is what no check has found yet: the oldest found first.
              const stale = unreleased.get(key)!;
              stale.splice(0, Math.max(0, stale.length - ((await counted(key)) - inFlight)));
            }
            if (reply.jobs.length < step.slots && !reply.more) {
              const waitingIds = [...keyOf.keys()].filter((id) => !finished.has(id) && !running.some((r) => r.id === id));
              for (const key of KEYS) {
                const stale = unreleased.get(key)!;
                // A stale entry younger than a check period may still hold the room.
                if (stale.length > 0 && offsetMs - stale[0] <= CHECK_MS + 50) continue;
                if (running.filter((r) => r.key === key).length < N) {
                  expect({ key, waiting: waitingIds.filter((id) => keyOf.get(id) === key) }).toEqual({ key, waiting: [] });
                }
              }
            }
          } else if (step.kind === 'end' || step.kind === 'stalled') {
            if (running.length === 0) continue;
            const [job] = running.splice(step.pick % running.length, 1);
            if (step.kind === 'stalled') {
              // What bullmq's stalled check does to a job whose lock lapsed: out of active, back to wait.
              await redis.del(`${bed.prefix}:cprop:${job.id}:lock`);
              await redis.lrem(bullmqKeys.active, 1, job.id);
              await redis.rpush(bullmqKeys.wait, job.id);
              unreleased.get(job.key)!.push(offsetMs);
              continue;
            }
            if (!job.locked) {
              // Its worker died: nothing ends it but the stalled check (above).
              running.push(job);
              continue;
            }
            const loaded = (await Job.fromId(queue, job.id))!;
            if (step.how === 'fail') await loaded.moveToFailed(new Error('no'), job.token, false);
            else await loaded.moveToCompleted('ok', job.token, false);
            finished.add(job.id);
            if (step.how === 'lost') unreleased.get(job.key)!.push(offsetMs);
            // (On the real clock: it only marks waiting buckets due now, which on the test clock they are too.)
            else await releaser.run('releaseInFlight', [queueKeys.inFlight], [queueKeys.base, job.id]);
          } else if (step.kind === 'die') {
            const locked = running.filter((r) => r.locked);
            if (locked.length === 0) continue;
            const job = locked[step.pick % locked.length];
            // Its lock lapsed: the job is still active, and still counts.
            await redis.del(`${bed.prefix}:cprop:${job.id}:lock`);
            job.locked = false;
          } else if (step.kind === 'add') {
            await add(step.key);
          } else {
            offsetMs += step.ms;
          }
          // The counter never counts fewer than the jobs in flight (the invariant), nor an ended job it was told of.
          for (const key of KEYS) {
            const inFlight = running.filter((r) => r.key === key).length;
            expect(await counted(key)).toBeGreaterThanOrEqual(inFlight);
            expect(await counted(key)).toBeLessThanOrEqual(inFlight + unreleased.get(key)!.length);
          }
        }
      } finally {
        await bed.close(redis);
      }
    }), { numRuns: 150 });
  }, 300_000);
});
