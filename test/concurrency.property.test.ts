import fc from 'fast-check';
import { Job, Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Cost, Key, Throttle, ThrottleKeys } from '../src';
import { takeNextJobs } from '../src/delivery/takeNextJobs';
import { ScriptRunner } from '../src/lua/scripts';
import { runReleaseInFlight } from '../src/lua/calls/releaseInFlight';
import { WorkerTestBed } from './support/bullmq';
import { newRedis } from './support/redis';
import { steerableLuaScripts } from './support/testClock';

/**
 * concurrency(n) with costs (job.data.g, 1 to n, or missing: counted 0) held to a model, decision by decision, through the delivery script itself (takeNextJobs) on
 * a steerable clock: jobs are delivered, completed or failed (released as the worker does, or with the release
 * lost), lose their lock (their worker died) and are taken back by a stalled check. After every step:
 * - never more than n of a bucket's cost between delivery and the jobs' end (the model's in flight, which counts
 *   a lockless job still in active);
 * - a delivery that fits is never refused: a call that leaves a slot empty leaves no job waiting whose cost fits
 *   its bucket's room, unless a job of that bucket ended without its release and no check (at most a second) found it yet.
 */
const N = 4;
const KEYS = ['a', 'b', 'c'];
const CHECK_MS = 1000;

type Step =
  | { kind: 'take'; slots: number }
  | { kind: 'end'; pick: number; how: 'complete' | 'fail' | 'lost' }
  | { kind: 'die'; pick: number }
  | { kind: 'stalled'; pick: number }
  | { kind: 'add'; key: string; cost: number | null }
  | { kind: 'tick'; ms: number };

// A job's cost (job.data.g): 1 to N, or none (it cannot be counted: it counts 0, and its worker fails it).
const arbCost = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: N }) }, { weight: 1, arbitrary: fc.constant(null) });

const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('take' as const), slots: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), how: fc.constantFrom('complete' as const, 'complete' as const, 'fail' as const, 'lost' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('die' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stalled' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.constantFrom(...KEYS), cost: arbCost }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(10, 300, CHECK_MS + 1) }) },
);

interface Stale { id: string; at: number; cost: number; stalled: boolean }

/**
 * The stale entries a counter still holds, given what it counts beyond the jobs in flight: a subset costing exactly
 * that. `wait`: bullmq's wait list now (the delivery script looks at its tail first).
 */
function keptStale(stale: readonly Stale[], beyond: number, wait: readonly string[]): Stale[] {
  // A stalled job's entry also goes when the job is seen back in wait (the script looks at wait's tail first: the
  // nearer a job is to it, the sooner its entry goes); a completed one's only by a check. Where costs leave it open
  // which went, the completed ones are kept, then the stalled ones furthest from wait's tail (the masks prefer the
  // last entries).
  const fromTail = (s: Stale) => { const at = wait.indexOf(s.id); return at < 0 ? Infinity : wait.length - 1 - at; };
  stale = [...stale.filter((s) => s.stalled).sort((a, b) => fromTail(a) - fromTail(b)), ...stale.filter((s) => !s.stalled)];
  for (let mask = (1 << stale.length) - 1; mask >= 0; mask--) {
    const kept = stale.filter((_, i) => mask & (1 << i));
    if (kept.reduce((sum, s) => sum + s.cost, 0) === beyond) return kept;
  }
  throw new Error(`the counter holds ${beyond} beyond the jobs in flight, which no set of its ended jobs ${JSON.stringify(stale)} costs`);
}

interface Running { id: string; key: string; cost: number; token: string; locked: boolean }

describe('concurrency, property (delivery script against a model)', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('never more than n in flight per bucket, and a job that fits is never left waiting', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ key: fc.constantFrom(...KEYS), cost: arbCost }), { minLength: 3, maxLength: 14 }), fc.array(arbStep, { minLength: 10, maxLength: 45 }), async (initial, steps) => {
      const bed = new WorkerTestBed('cprop');
      try {
        // A worker that never runs registers and publishes the queue's config; the test makes the calls.
        const worker = bed.worker('cprop', null, { autorun: false, throttles: [Throttle.named('crawl').key([Key.data('k')]).cost(Cost.data('g')).concurrency(N)] });
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
        const costOf = new Map<string, number>();
        const add = async (key: string, cost: number | null) => {
          const job = await queue.add('j', cost === null ? { k: key } : { k: key, g: cost });
          keyOf.set(job.id!, key);
          costOf.set(job.id!, cost ?? 0);
        };
        for (const { key, cost } of initial) await add(key, cost);

        const running: Running[] = [];
        // Per bucket, when (test clock, ms) each job left active without its release: the bucket may count it
        // until a check finds it, at most CHECK_MS later (the first look at the full bucket after that).
        const unreleased = new Map<string, Stale[]>(KEYS.map((key) => [key, []]));
        const inFlightOf = (key: string) => running.filter((r) => r.key === key).reduce((sum, r) => sum + r.cost, 0);
        const finished = new Set<string>();
        let nextToken = 0;
        const counted = async (key: string) => Number((await redis.hget(keys.inFlightCounter('crawl', `s${key}`), '#')) ?? 0);

        for (const step of steps) {
          if (step.kind === 'take') {
            const tokens = Array.from({ length: step.slots }, () => `tok${nextToken++}`);
            const reply = await takeNextJobs(runner, { ...call, tokens });
            for (let i = 0; i < reply.jobs.length; i++) {
              const id = reply.jobs[i].id;
              running.push({ id, key: keyOf.get(id)!, cost: costOf.get(id)!, token: tokens[i], locked: true });
            }
            const wait = await redis.lrange(bullmqKeys.wait, 0, -1);
            for (const key of KEYS) {
              const inFlight = inFlightOf(key);
              expect(inFlight).toBeLessThanOrEqual(N);
              // A job delivered again replaced its stale entry; a check found some (or all) of the others.
              const stale = unreleased.get(key)!.filter((u) => !reply.jobs.some((j) => j.id === u.id));
              const beyond = (await counted(key)) - inFlight;
              unreleased.set(key, keptStale(stale, beyond, wait));
            }
            // Jobs the script cannot classify (no usable cost) wait for the worker's classifier: run it, as the worker would.
            if (reply.unclassified > 0) await (worker as unknown as { gate: { classifyBatch(): Promise<number> } }).gate.classifyBatch();
            // A call may free room after it looked at a waiting class (a job from wait whose earlier delivery ended
            // unreleased): it then says to look again now, and the worker calls again at once.
            const looksAgainNow = reply.nextWakeUs > 0 && reply.nextWakeUs <= reply.nowUs;
            if (reply.jobs.length < step.slots && !reply.more && reply.unclassified === 0 && !looksAgainNow) {
              const waitingIds = [...keyOf.keys()].filter((id) => !finished.has(id) && !running.some((r) => r.id === id));
              for (const key of KEYS) {
                const stale = unreleased.get(key)!;
                // A stale entry younger than a check period may still hold the room.
                if (stale.some((u) => offsetMs - u.at <= CHECK_MS + 50)) continue;
                const room = N - inFlightOf(key);
                expect({ key, room, fitting: waitingIds.filter((id) => keyOf.get(id) === key && costOf.get(id)! <= room) }).toEqual({ key, room, fitting: [] });
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
              if (job.cost > 0) unreleased.get(job.key)!.push({ id: job.id, at: offsetMs, cost: job.cost, stalled: true });
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
            if (step.how === 'lost' && job.cost > 0) unreleased.get(job.key)!.push({ id: job.id, at: offsetMs, cost: job.cost, stalled: false });
            // (On the real clock: it only marks waiting buckets due now, which on the test clock they are too.)
            else await runReleaseInFlight(releaser, { inFlight: queueKeys.inFlight, queueBase: queueKeys.base, jobIds: [job.id] });
          } else if (step.kind === 'die') {
            const locked = running.filter((r) => r.locked);
            if (locked.length === 0) continue;
            const job = locked[step.pick % locked.length];
            // Its lock lapsed: the job is still active, and still counts.
            await redis.del(`${bed.prefix}:cprop:${job.id}:lock`);
            job.locked = false;
          } else if (step.kind === 'add') {
            await add(step.key, step.cost);
          } else {
            offsetMs += step.ms;
          }
          // The counter never counts fewer than the jobs in flight (the invariant), nor an ended job it was told of.
          for (const key of KEYS) {
            const inFlight = inFlightOf(key);
            const now = await counted(key);
            const bound = inFlight + unreleased.get(key)!.reduce((sum, u) => sum + u.cost, 0);
            if (now < inFlight || now > bound) throw new Error(`bucket ${key} counts ${now}, its jobs in flight cost ${inFlight}, ended unreleased ${bound - inFlight}: ${JSON.stringify({ step, running, unreleased: unreleased.get(key), entries: await redis.hgetall(keys.inFlightCounter('crawl', `s${key}`)) })}`);
          }
        }
      } finally {
        await bed.close(redis);
      }
      // CPROP_EXAMPLE='[initial, steps]' replays one counterexample.
    }), process.env.CPROP_EXAMPLE ? { numRuns: 1, examples: [JSON.parse(process.env.CPROP_EXAMPLE)] } : {
      numRuns: 150,
      // Found by this test: two stalled jobs of equal cost back in wait, the tail one's entry released when the script
      // looked at it; the model kept the wrong one (it ignored which job the script looks at first).
      examples: [[
        [{ key: 'c', cost: 1 }, { key: 'c', cost: 1 }, { key: 'a', cost: null }, { key: 'a', cost: null }, { key: 'a', cost: null }],
        [{ kind: 'take', slots: 3 }, { kind: 'stalled', pick: 0 }, { kind: 'stalled', pick: 0 }, { kind: 'take', slots: 1 }, { kind: 'take', slots: 1 },
          { kind: 'end', pick: 0, how: 'complete' }, { kind: 'end', pick: 0, how: 'complete' }, { kind: 'take', slots: 1 }, { kind: 'tick', ms: 10 },
          { kind: 'end', pick: 0, how: 'complete' }, { kind: 'tick', ms: 10 }, { kind: 'end', pick: 0, how: 'complete' }, { kind: 'take', slots: 1 }],
      ]],
    });
  }, 300_000);
});
