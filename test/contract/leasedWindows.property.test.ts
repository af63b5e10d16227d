import fc from 'fast-check';
import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Cost, Key, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { leaseTokens, LeaseRequest, returnLeasedTokens } from '../../src/delivery/leased/grantorCalls';
import { bucketPartsOf } from '../../src/delivery/leased/leaseBook';
import { Deposit, ReturnGroup, takeLeasedJobs } from '../../src/delivery/leased/takeLeasedJobs';
import { bucketsOfTicket, lateLeasedReturns } from '../../src/delivery/lateStartTickets';
import { TakeCall } from '../../src/delivery/takeNextJobs';
import { classBuckets } from '../../src/keys/classMember';
import { ScriptRunner } from '../../src/lua/scripts';
import { ReplicaConfirmation } from '../../src/redis/ReplicaConfirmation';
import { LeasedModel, ModelBucket, ModelLimit, ModelReturnGroup } from '../model/leasedModel';
import { connectionFor } from '../support/bullmq';
import { mostCostInAnyWindow } from '../support/inFlight';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { TestClock } from '../support/testClock';
import { testRedisUrl } from '../support/testRedis';

/**
 * Leased delivery's window tokens held to a reference model (test/model/leasedModel.ts), decision by decision, on
 * the test clock: random sequences of jobs added, delivery calls (lua/takeLeasedJobs-19.lua: sweeps and spends from
 * the queue's pools), lease requests (lua/leaseTokens-1.lua), deposits (the same script, before its delivery body),
 * returns of unkept, expired, withdrawn and put-back tokens (lua/returnLeasedTokens-1.lua, lost and repeated ones
 * among them), and clock advances, ended by the queue's last worker withdrawing its pools (lua/withdrawLeases-1.lua).
 *
 * How it is driven, and what is not: the scripts run as the package calls them (src/delivery/leased: takeLeasedJobs,
 * leaseTokens, returnLeasedTokens, lateLeasedReturns, bucketPartsOf) on a ScriptRunner whose scripts read the test
 * clock (test/support/testClock.ts, as test/grantor.property.test.ts does). LeasedDelivery itself (which classes to
 * lease for and how many, its timers) is not driven: this test plays its part, with random choices, so that it can
 * ask for what a worker would rarely ask for (refills, late deposits, lost and repeated returns); the contract suite
 * runs the real one. A ThrottledWorker that never runs a job publishes the queue's config and the throttles' limits
 * (on the real clock, before the test clock takes over). The test clock stands still ('@us') between advances, so
 * that the model sees the very instant each script saw; it starts two minutes ahead of the Redis clock, so that no
 * key the scripts expire at a test-clock time (counters, returned-sets) lapses on the real clock meanwhile; the keys
 * that expire after a real-clock time to live (pools: h plus 10 s) outlive a run. Which job a call delivers is
 * includes/takeJobsBody's choice, shared with exact delivery and not modelled here: the model checks that what each
 * delivered job spent is what its pools held, taken earliest expiry first, as its ticket names it.
 *
 * After every step:
 *   - grants (less what was returned) are at most N in any window of W + h, for every limit of every bucket;
 *   - spends of jobs that were not put back are at most N in any window of W: the guarantee at processedOn;
 *   - every decision matched the model: each grant (granted, when room returns, the bucket lacking), each deposit
 *     (kept, answered for return, counted expired), each spend (the grants a ticket names, its expiry), each sweep of
 *     an expired pool entry, each return's count of tokens that stopped counting (a pool's expiry gives its unspent
 *     room back), and the pools' contents as the withdrawal finds them.
 * Then the queue is drained as a worker would (call, lease for what it wants, deposit, return, the clock moved to when
 * the calls say to look again): every job is delivered in the end, no class left waiting for tokens nobody asks for.
 * Seed 2 by default (see the options below); a failure prints its seed and path: LEASED_PROPERTY_SEED and
 * LEASED_PROPERTY_PATH replay it, LEASED_PROPERTY_SEED=random runs fresh seeds (LEASED_PROPERTY_RUNS sets the number
 * of runs, 150 by default: about 15 s).
 */

const THROTTLE_ALL = 'all';
const THROTTLE_PER = 'per';
const KEY_VALUES = ['a', 'b'];

/** Windows of 1 us slots (under 220 ms) and of wider ones. */
const arbWindow = (largest: number) => fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 200, max: largest }));
/** One or two limits that pass validation (as test/grantor.property.test.ts draws them). */
const arbLimits: fc.Arbitrary<ModelLimit[]> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 6 }), arbWindow(1500)).map(([max, windowMs]) => [{ max, windowMs }]),
  fc.tuple(fc.integer({ min: 1, max: 4 }), arbWindow(600), fc.integer({ min: 2, max: 4 }), fc.nat())
    .filter(([max, , factor]) => max * (factor - 1) >= 2)
    .map(([max, windowMs, factor, pick]) => [{ max, windowMs }, { max: max + 1 + (pick % (max * factor - max - 1)), windowMs: windowMs * factor }]),
);

interface Shape {
  all: ModelLimit[];
  /** 'all' counts each job's data.c (a cost) rather than 1. */
  costed: boolean;
  /** A keyed throttle 'per' (data.k), or none. */
  per: ModelLimit[] | null;
  leaseMs: number;
}
const arbShape: fc.Arbitrary<Shape> = fc.record({
  all: arbLimits,
  costed: fc.boolean(),
  per: fc.option(arbLimits, { nil: null }),
  leaseMs: fc.constantFrom(10, 40, 100),
});

type Step =
  | { kind: 'add'; jobs: { k: number; c: number }[] }
  | { kind: 'call'; slots: number; wants: boolean; refillBelow: number }
  | { kind: 'lease'; counts: number[]; heldCounts: boolean }
  | { kind: 'deposit'; slots: number }
  | { kind: 'return'; how: 'all' | 'one' | 'again' | 'drop'; pick: number }
  | { kind: 'putBack'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'untilRoom'; jitterMs: number }
  | { kind: 'untilExpiry'; jitterMs: number }
  /** As a worker goes: a call with slots, a lease for what it wants, the deposit, a call again, returns sent. */
  | { kind: 'round'; slots: number; counts: number[] };

const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), jobs: fc.array(fc.record({ k: fc.nat(1), c: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 4 }) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('call' as const), slots: fc.integer({ min: 0, max: 4 }), wants: fc.boolean(), refillBelow: fc.nat(3) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('lease' as const), counts: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 3 }), heldCounts: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('deposit' as const), slots: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 3 })) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('return' as const), how: fc.constantFrom('all' as const, 'all' as const, 'one' as const, 'again' as const, 'drop' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('putBack' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 1600 })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('untilRoom' as const), jitterMs: fc.constantFrom(-1, 0, 0, 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('untilExpiry' as const), jitterMs: fc.constantFrom(-0.001, 0, 0.001, 1) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('round' as const), slots: fc.integer({ min: 1, max: 4 }), counts: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 3 }) }) },
);

interface Delivered { id: string; atUs: number; ticket: string; buckets: ModelBucket[]; putBack: boolean }
interface GrantRecord { grantUs: number; leaseMs: number; bucketId: string; outstanding: Map<number, number> }
interface PendingDeposit extends Deposit { buckets: ModelBucket[] }

/** What the runs exercised, over all of them (printed, and each kind required at least once). */
const seen = { runs: 0, grants: 0, granted: 0, refusedInPart: 0, kept: 0, unkept: 0, lateDeposits: 0, spends: 0, sweeps: 0, returnsStopping: 0, returnsVoid: 0, putBacks: 0, withdrawn: 0 };

describe('leased windows: grants, pools, spends and expiry against a reference model', () => {
  let redis: Redis;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });

  it('grant, keep, spend, sweep and return as the model does; never more than N granted in W + h, nor spent in W', async () => {
    await fc.assert(
      fc.asyncProperty(arbShape, fc.array(arbStep, { minLength: 10, maxLength: 40, size: 'large' }), async (shape, drawn) => {
        const steps: Step[] = [{ kind: 'add', jobs: [{ k: 0, c: 1 }, { k: 1, c: 2 }] }, ...drawn];
        const h = shape.leaseMs;
        const prefix = uniquePrefix('lwprop');
        const name = 'q';
        const limitsOf = (encoded: string): ModelLimit[] => (encoded === THROTTLE_ALL ? shape.all : shape.per ?? []);
        const maxCost = Math.min(...shape.all.map((l) => l.max));
        const throttles = [
          shape.all.reduce((t, l) => t.limit(l.max, l.windowMs), shape.costed ? Throttle.named(THROTTLE_ALL).cost(Cost.data('c')) : Throttle.named(THROTTLE_ALL)),
          ...(shape.per ? [shape.per.reduce((t, l) => t.limit(l.max, l.windowMs), Throttle.named(THROTTLE_PER).key([Key.data('k')]))] : []),
        ];
        const queue = new Queue(name, { connection: connectionFor(), prefix });
        // A worker that never runs a job: it publishes the queue's config and the limits (leased: the grantor option).
        const worker = new ThrottledWorker(name, null, {
          connection: connectionFor(), prefix, leaseMs: h, declarationTtlMs: 600_000, throttles, grantor: { connection: testRedisUrl() },
        });
        worker.on('error', () => undefined);
        try {
          await worker.waitUntilReady();
          const keys = new ThrottleKeys(prefix);
          const q = keys.queue(name);
          const clock = new TestClock();
          const [s, us] = await redis.time();
          clock.stopAt(Number(s) * 1e6 + Number(us) + 120e6);
          const { scripts, extraArgs } = clock.internals();
          /** The stopped test clock: what every script run now sees (us). */
          const clockNowUs = () => Number(String(extraArgs!()[0]).slice(1));
          const runner = new ScriptRunner(redis, scripts!, extraArgs!);
          const grantor = { runner, slotKey: keys.registryVersion, throttlePrefix: keys.throttlePrefix, confirmation: new ReplicaConfirmation(() => keys.grantorRecord) };
          const asker = { queueId: `${prefix}:${name}`, leaseMs: h, durableRedis: false, holder: 'w', holdMs: 30_000, credit: [], knownNodeId: '' };
          const call: Omit<TakeCall, 'tokens'> = {
            bullmqKeys: new QueueKeys(prefix).getKeys(name), queueKeys: q, throttlePrefix: keys.throttlePrefix,
            lockDuration: 30_000, leaseMs: h, workerName: '', gen: (await redis.hget(q.state, 'gen'))!, durableRedis: false,
          };

          const model = new LeasedModel(limitsOf);
          const jobBuckets = new Map<string, ModelBucket[]>();
          const delivered: Delivered[] = [];
          const grants = new Map<string, GrantRecord[]>();
          let node = '';
          let lastWanted: { wanted: { member: string; held: number }[]; requestUs: number } | undefined;
          let pendingDeposits: PendingDeposit[] = [];
          let pendingReturns: ReturnGroup[] = [];
          const sentReturns: ReturnGroup[] = [];
          let lastRoomInMs = 0;
          let lastRequestUs = 0;
          let tokenSeq = 0;
          let round = 0;

          const bucketsOfJob = (data: { k: number; c: number }): ModelBucket[] => [
            { id: `${THROTTLE_ALL}=-`, cost: shape.costed ? data.c : 1 },
            ...(shape.per ? [{ id: `${THROTTLE_PER}=s${KEY_VALUES[data.k]}`, cost: 1 }] : []),
          ];
          const modelBuckets = (member: string): ModelBucket[] => classBuckets(member).map((b) => ({ id: b.id, cost: b.cost }));
          /** Takes what the grantor stopped counting off the grants' records (per window), for the W + h check. */
          const settleReturns = (groups: readonly ModelReturnGroup[], stopped: Map<number, number>[]) => {
            groups.forEach((group, i) => {
              const base = group.nonce.split('/')[0];
              const record = (grants.get(base) ?? []).find((g) => g.bucketId === group.bucketId);
              if (!record) return;
              for (const [windowMs, removed] of stopped[i]) record.outstanding.set(windowMs, Math.max(0, record.outstanding.get(windowMs)! - removed));
            });
          };
          const sendReturns = async (groups: ReturnGroup[]) => {
            if (groups.length === 0) return;
            const nowUs = clockNowUs();
            const returned = await returnLeasedTokens(grantor, groups);
            const expected = model.returnGroups(nowUs, groups);
            expect(returned).toBe(expected.returned);
            if (returned > 0) seen.returnsStopping++; else seen.returnsVoid++;
            settleReturns(groups, expected.stopped);
            sentReturns.push(...groups);
          };

          /** A delivery call's reply, with the deposits it made: spends, sweeps, expiries and wants, against the model. */
          const take = async (slots: number, wantsLimit: number, refillBelow: number, deposits: PendingDeposit[]) => {
            // The jobs each deposit's class holds in its own list (which jobs are held where is the delivery body's, not
            // modelled): read as the script will find them, the deposits coming before its body.
            const held = await Promise.all(deposits.map((d) => redis.zcard(`${q.base}:c:${d.member}`)));
            const tokens = Array.from({ length: slots }, () => `t${tokenSeq++}`);
            const { reply, lease: leased } = await takeLeasedJobs(runner, { ...call, tokens }, wantsLimit, refillBelow, deposits, node, undefined, node);
            const nowUs = reply.nowUs;
            // The scripts see the test clock, standing still: the model sees the same instant.
            expect(nowUs).toBe(clockNowUs());
            node = leased.node;
            // Deposits first, in order.
            let expectedExpired = 0;
            const expectedX: ModelReturnGroup[] = [];
            deposits.forEach((d, i) => {
              const { keep, returns, expired } = model.deposit(nowUs, h, d, held[i]);
              if (keep > 0) seen.kept++;
              if (d.count > keep) seen.unkept++;
              if (expired > 0) seen.lateDeposits++;
              expectedExpired += expired;
              expectedX.push(...returns);
            });
            const xReturns = leased.returns.filter((r) => r.nonce.endsWith('/x'));
            const eReturns = leased.returns.filter((r) => r.nonce.endsWith('/e'));
            expect(xReturns.length + eReturns.length).toBe(leased.returns.length);
            expect(xReturns).toEqual(expectedX);
            // Sweeps: each expired entry answered for return is one the model's pool held, expired, with what it had left.
            for (const group of eReturns) {
              expect({ group, swept: model.swept(nowUs, group) }).toEqual({ group, swept: true });
              seen.sweeps++;
              expectedExpired += group.count;
            }
            expect(leased.expired).toBe(expectedExpired);
            // Spends: what each delivered job took is what the model's pools held, earliest expiry first.
            expect(reply.jobs.length).toBeLessThanOrEqual(slots);
            expect(reply.tickets ?? []).toHaveLength(reply.jobs.length);
            reply.jobs.forEach((job, i) => {
              const buckets = jobBuckets.get(job.id)!;
              const spent = model.spend(nowUs, buckets);
              expect({ job: job.id, spent: spent !== null }).toEqual({ job: job.id, spent: true });
              const ticket = reply.tickets![i];
              const bang = ticket.indexOf('!');
              expect(Number(ticket.slice(0, bang))).toBe(spent!.expiryUs);
              const named = new Map(bucketsOfTicket(ticket.slice(bang + 1)).map((b) => [b.bucketId, { cost: b.cost, grants: b.grants }]));
              expect(named).toEqual(spent!.grants);
              delivered.push({ id: job.id, atUs: nowUs, ticket: ticket.slice(bang + 1), buckets, putBack: false });
              seen.spends++;
            });
            pendingReturns.push(...leased.returns);
            if (leased.wanted.length > 0) lastWanted = { wanted: leased.wanted, requestUs: nowUs };
            return reply;
          };

          /** A lease request for the classes the last call wanted (the first few), as LeasedDelivery would make it. */
          const lease = async (counts: number[], heldCounts: boolean) => {
            if (!lastWanted) return;
            const { wanted, requestUs } = lastWanted;
            lastWanted = undefined;
            const requests: LeaseRequest[] = wanted.slice(0, counts.length).map((w, i) => ({
              member: w.member, buckets: bucketPartsOf(w.member), refill: w.held < 0,
              count: heldCounts && w.held > 0 ? w.held : counts[i],
            }));
            const answer = await leaseTokens(grantor, asker, requests);
            expect(answer.status).toBe('decided');
            expect(answer.grantUs).toBe(clockNowUs());
            const expected = model.lease(answer.grantUs, h, requests.map((r) => ({ buckets: modelBuckets(r.member), count: r.count, refill: r.refill })));
            expect(answer.results.map(({ granted, roomInMs, lacking }) => ({ granted, roomInMs, lacking }))).toEqual(expected);
            seen.grants += requests.length;
            for (const [i, r] of answer.results.entries()) {
              seen.granted += r.granted;
              if (r.granted < requests[i].count) seen.refusedInPart++;
            }
            const nonce = `r${round++}`;
            requests.forEach((request, i) => {
              const { granted, roomInMs, lacking } = answer.results[i];
              if (granted < request.count) lastRoomInMs = roomInMs;
              const buckets = modelBuckets(request.member);
              for (const b of buckets) {
                if (granted === 0 || b.cost === 0) continue;
                const outstanding = new Map(limitsOf(b.id.split('=')[0]).map((l) => [l.windowMs, granted * b.cost]));
                grants.set(`${nonce}.${i}`, [...(grants.get(`${nonce}.${i}`) ?? []), { grantUs: answer.grantUs, leaseMs: h, bucketId: b.id, outstanding }]);
              }
              pendingDeposits.push({ member: request.member, requestUs, grantUs: answer.grantUs, nonce: `${nonce}.${i}`, count: granted, roomInMs, lacking, refill: request.refill, buckets });
            });
            lastRequestUs = requestUs;
          };

          for (const step of steps) {
            if (step.kind === 'add') {
              const added = await queue.addBulk(step.jobs.map((j) => ({ name: 'call', data: { k: KEY_VALUES[j.k], c: Math.min(j.c, maxCost) } })));
              step.jobs.forEach((j, i) => jobBuckets.set(added[i].id!, bucketsOfJob({ k: j.k, c: Math.min(j.c, maxCost) })));
            } else if (step.kind === 'call') {
              await take(step.slots, step.wants ? 32 : 0, step.refillBelow, []);
            } else if (step.kind === 'lease') {
              await lease(step.counts, step.heldCounts);
            } else if (step.kind === 'deposit') {
              if (pendingDeposits.length === 0 && step.slots === 0) continue;
              const deposits = pendingDeposits;
              pendingDeposits = [];
              await take(step.slots, 0, 0, deposits);
            } else if (step.kind === 'return') {
              if (step.how === 'all') {
                const groups = pendingReturns;
                pendingReturns = [];
                await sendReturns(groups);
              } else if (step.how === 'one' && pendingReturns.length > 0) {
                await sendReturns(pendingReturns.splice(step.pick % pendingReturns.length, 1));
              } else if (step.how === 'again' && sentReturns.length > 0) {
                await sendReturns([sentReturns[step.pick % sentReturns.length]]);
              } else if (step.how === 'drop' && pendingReturns.length > 0) {
                // A return lost on its way: only allowance is wasted.
                pendingReturns.splice(step.pick % pendingReturns.length, 1);
              }
            } else if (step.kind === 'putBack') {
              // A job that would start late goes back: what it spent goes back to the grantor, and it never started.
              const live = delivered.filter((d) => !d.putBack);
              if (live.length === 0) continue;
              const job = live[step.pick % live.length];
              job.putBack = true;
              seen.putBacks++;
              await sendReturns(lateLeasedReturns({ jobId: job.id, hMs: h, deadlineMs: h, grantUs: job.atUs, ticket: job.ticket, repliedAt: 0 }));
            } else if (step.kind === 'round') {
              await take(step.slots, 32, 1, []);
              await lease(step.counts, false);
              const deposits = pendingDeposits;
              pendingDeposits = [];
              await take(0, 0, 0, deposits);
              await take(step.slots, 32, 1, []);
              const groups = pendingReturns;
              pendingReturns = [];
              await sendReturns(groups);
            } else if (step.kind === 'advance') {
              clock.advance(step.ms);
            } else if (step.kind === 'untilRoom') {
              clock.advance(Math.max(0, lastRoomInMs + step.jitterMs));
            } else {
              // Around the moment the last lease request's tokens expire (h after the reply it followed).
              clock.advance(Math.max(0, (lastRequestUs + h * 1000 - clockNowUs()) / 1000 + step.jitterMs));
            }
            checkBounds(h, grants, delivered, limitsOf);
          }

          // Then as a worker drains its queue: every job is delivered in the end (or put back), no class left waiting
          // for tokens nobody asks for. The clock moves to when the calls say to look again.
          const undelivered = () => jobBuckets.size - delivered.length;
          for (let i = 0; i < 600 && undelivered() > 0; i++) {
            const before = delivered.length;
            let reply = await take(4, 32, 1, []);
            await lease([6, 6, 6, 6], true);
            const deposits = pendingDeposits;
            pendingDeposits = [];
            if (deposits.length > 0) reply = await take(4, 0, 1, deposits);
            const groups = pendingReturns;
            pendingReturns = [];
            await sendReturns(groups);
            checkBounds(h, grants, delivered, limitsOf);
            // Nothing went: on to when the last call said to look again (a bucket's room, the grantor's word, tokens due).
            if (delivered.length === before) clock.advance(Math.max(1, (reply.nextWakeUs - clockNowUs()) / 1000));
          }
          expect({ undelivered: undelivered() }).toEqual({ undelivered: 0 });

          // The queue's last worker leaves: its pools are withdrawn (what the model holds unexpired) and returned.
          const withdrawn = (await runner.run('withdrawLeases', [`${q.base}:no-workers`], [q.base, 'closing'])) as unknown[];
          const groups: ReturnGroup[] = [];
          for (let i = 0; i < Number(withdrawn[0]); i++) {
            const at = 1 + 5 * i;
            groups.push({ bucketId: String(withdrawn[at]), grantUs: Number(withdrawn[at + 1]), leaseMs: Number(withdrawn[at + 2]), nonce: String(withdrawn[at + 3]), count: Number(withdrawn[at + 4]) });
          }
          const nowUs = clockNowUs();
          const byBucketThenNonce = (a: ReturnGroup, b: ReturnGroup) => (a.bucketId + a.nonce < b.bucketId + b.nonce ? -1 : 1);
          expect([...groups].sort(byBucketThenNonce)).toEqual(model.withdraw(nowUs).sort(byBucketThenNonce));
          seen.withdrawn += groups.length;
          seen.runs++;
          await sendReturns(groups);
          checkBounds(h, grants, delivered, limitsOf);
        } finally {
          await worker.close().catch(() => undefined);
          await queue.close().catch(() => undefined);
          await deleteKeysUnder(redis, prefix);
        }
      }),
      {
        numRuns: Number(process.env.LEASED_PROPERTY_RUNS ?? 150),
        // A fixed seed unless one is given: the check below needs every kind of step exercised, and a withdrawal
        // with tokens left comes up 0-3 times in 150 random runs (none in one CI rehearsal, one run in three here).
        // The runs are deterministic on the test clock: seed 2 withdraws 3 times. LEASED_PROPERTY_SEED=random
        // explores new ones.
        ...(process.env.LEASED_PROPERTY_SEED === 'random' ? {} : {
          seed: Number(process.env.LEASED_PROPERTY_SEED ?? 2), path: process.env.LEASED_PROPERTY_PATH, endOnFailure: process.env.LEASED_PROPERTY_SEED !== undefined,
        }),
      },
    );
    process.stderr.write(`leased windows property: ${JSON.stringify(seen)}\n`);
    for (const [kind, count] of Object.entries(seen)) expect({ kind, exercised: count > 0 }).toEqual({ kind, exercised: true });
    // (About 15 s; the rest is for shrinking a counterexample, each run starting a worker of its own.)
  }, 300_000);
});

/**
 * For every limit of every bucket: grants less returns at most N in any window of W + h (by grant time), and the
 * spends of jobs not put back at most N in any window of W (by the time of the call that spent them).
 */
function checkBounds(h: number, grants: Map<string, GrantRecord[]>, delivered: readonly Delivered[], limitsOf: (encoded: string) => ModelLimit[]): void {
  const records = [...grants.values()].flat();
  const bucketIds = new Set([...records.map((g) => g.bucketId), ...delivered.flatMap((d) => d.buckets.map((b) => b.id))]);
  for (const bucketId of bucketIds) {
    for (const limit of limitsOf(bucketId.split('=')[0])) {
      const granted = records.filter((g) => g.bucketId === bucketId).map((g) => ({ at: g.grantUs, cost: g.outstanding.get(limit.windowMs) ?? 0 }));
      expect({ bucketId, limit, grantedInWh: mostCostInAnyWindow(granted, (limit.windowMs + h) * 1000) <= limit.max }).toEqual({ bucketId, limit, grantedInWh: true });
      const spent = delivered.filter((d) => !d.putBack).flatMap((d) => d.buckets.filter((b) => b.id === bucketId).map((b) => ({ at: d.atUs, cost: b.cost })));
      expect({ bucketId, limit, spentInW: mostCostInAnyWindow(spent, limit.windowMs * 1000) <= limit.max }).toEqual({ bucketId, limit, spentInW: true });
    }
  }
}
