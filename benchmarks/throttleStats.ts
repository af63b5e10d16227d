import { performance } from 'node:perf_hooks';
import { ThrottleAdmin } from '../src/admin/ThrottleAdmin';
import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { Grantor } from '../src/grant/Grantor';
import { ThrottleKeys } from '../src/keys/ThrottleKeys';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { BullmqRig } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { usedMemory } from './support/memory';
import { constructStatsState, customerKey, StatsState } from './support/statsState';
import { percentile, round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const WINDOW_MS = 3_600_000;
const MAX = 100;
const CALLS = 1000;
const ROUNDS = 50;
const WARM_UP = 20;
const TOP = 10;
/** Buckets with a real counter hash, asked for by throttleBucket in turn (with as many without one). */
const COUNTERS = 20;
const TOKENS_PER_COUNTER = 40;

interface Case {
  label: string;
  buckets: number;
  throttle: Throttle;
}

const CASES: Case[] = [
  { label: '1,000,000 buckets (constructed state)', buckets: 1_000_000, throttle: Throttle.named('stats-1m').key([Key.data('customer')]).limit(MAX, WINDOW_MS) },
  { label: '1,000 buckets (constructed state)', buckets: 1_000, throttle: Throttle.named('stats-1k').key([Key.data('customer')]).limit(MAX, WINDOW_MS) },
];

/**
 * What the admin sends: its scripts (EVALSHA: lua/readSnapshot-n.lua and the clock read, whose usec includes the
 * commands they run) and its plain reads (the registry's ZRANGEBYSCORE, an override's HGET, TIME). The registry's
 * HGETALL is left out: the snapshot script's HGETALLs count on the same line, inside EVALSHA's time already.
 */
const READS = ['evalsha', 'time', 'zrangebyscore', 'hget'];
function readUsec(commandstats: string): number {
  let usec = 0;
  for (const command of READS) usec += Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, 'm').exec(commandstats)?.[1] ?? 0);
  return usec;
}

interface Timing {
  latencies: number[];
  redisUsec: number;
}

interface Measured {
  testCase: Case;
  state: StatsState;
  stats: Timing;
  bucket: Timing;
  memory: { activeBytes: number; fullBytes: number; waitingBytes: number; activeEncoding: string; usedMemoryDelta: number };
}

async function memoryUsage(context: BenchmarkContext, key: string): Promise<number> {
  return Number(await context.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
}

/** Checks that the admin reads back what was constructed, so that the timings are of real answers. */
async function verify(admin: ThrottleAdmin, testCase: Case, state: StatsState): Promise<void> {
  const name = testCase.throttle.name;
  const stats = await admin.throttleStats(name, { top: TOP });
  const problems: string[] = [];
  if (stats.activeBuckets !== state.active) problems.push(`activeBuckets ${stats.activeBuckets} ≠ ${state.active}`);
  if (stats.bucketsAtLimit !== state.full) problems.push(`bucketsAtLimit ${stats.bucketsAtLimit} ≠ ${state.full}`);
  if (stats.waiting !== state.waitingJobs) problems.push(`waiting ${stats.waiting} ≠ ${state.waitingJobs}`);
  if (stats.deliveredTotal !== state.delivered) problems.push(`deliveredTotal ${stats.deliveredTotal} ≠ ${state.delivered}`);
  if (stats.topBuckets.length !== TOP) problems.push(`${stats.topBuckets.length} top buckets, not ${TOP}`);
  const first = stats.topBuckets[0];
  if (!first || first.key?.[0] !== state.top.key || first.waiting !== state.top.waiting) {
    problems.push(`top bucket ${JSON.stringify(first)} ≠ ${JSON.stringify(state.top)}`);
  }
  if (stats.lastWindow[0]?.delivered !== state.recentInWindow(stats.at)) problems.push(`lastWindow ${stats.lastWindow[0]?.delivered} ≠ ${state.recentInWindow(stats.at)}`);
  for (const [key, counted] of state.counted) {
    const bucket = await admin.throttleBucket(name, [key]);
    if (bucket.limits[0].counted !== counted) problems.push(`bucket ${key}: counted ${bucket.limits[0].counted} ≠ ${counted}`);
    if ((counted >= MAX) !== (bucket.limits[0].roomAt !== null)) problems.push(`bucket ${key}: roomAt ${bucket.limits[0].roomAt} with ${counted} of ${MAX}`);
  }
  const empty = await admin.throttleBucket(name, [customerKey(testCase.buckets + 1)]);
  if (empty.limits[0].counted !== 0) problems.push(`a bucket with no counter counted ${empty.limits[0].counted}`);
  if (problems.length > 0) throw new Error(`throttle '${name}': the admin does not read back the constructed state: ${problems.join('; ')}`);
}

/**
 * Checks that the delivery Lua itself takes the constructed counters as its own (after the timings, since it
 * adds a token): a grant on a full bucket is refused with the admin's roomAt as retryAt, and one on a bucket
 * with room is granted and counted.
 */
async function verifyWithLua(context: BenchmarkContext, prefix: string, admin: ThrottleAdmin, testCase: Case, state: StatsState): Promise<void> {
  const grantor = new Grantor({ connection: context.redisUrl, prefix });
  try {
    const name = testCase.throttle.name;
    const [fullKey, roomKey] = [...state.counted.entries()].reduce<[string?, string?]>(
      ([full, room], [key, counted]) => [full ?? (counted >= MAX ? key : undefined), room ?? (counted < MAX ? key : undefined)], []);
    if (!fullKey || !roomKey) throw new Error('the constructed state has no full bucket or no bucket with room');
    const before = await admin.throttleBucket(name, [fullKey]);
    const [refused, granted] = await grantor.grant([[{ throttle: testCase.throttle, key: [fullKey] }], [{ throttle: testCase.throttle, key: [roomKey] }]]);
    const after = await admin.throttleBucket(name, [roomKey]);
    if (refused.granted || refused.retryAt !== before.limits[0].roomAt) {
      throw new Error(`grant on full bucket ${fullKey}: ${JSON.stringify(refused)}, expected a refusal until ${before.limits[0].roomAt}`);
    }
    if (!granted.granted || after.limits[0].counted !== state.counted.get(roomKey)! + 1) {
      throw new Error(`grant on bucket ${roomKey}: ${JSON.stringify(granted)}, counted ${after.limits[0].counted} after it`);
    }
  } finally {
    await grantor.close();
  }
}

/** `calls` timed calls; Redis time from INFO commandstats around them (the idle worker's heartbeat may add a few µs). */
async function timeCalls(context: BenchmarkContext, calls: number, call: (i: number) => Promise<unknown>, into: Timing): Promise<void> {
  const before = readUsec(await context.redis.info('commandstats'));
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await call(i);
    into.latencies.push(performance.now() - t0);
  }
  into.redisUsec += readUsec(await context.redis.info('commandstats')) - before;
}

export const throttleStats: Benchmark = {
  name: 'throttleStats',
  description: `ThrottleAdmin.throttleStats(top ${TOP}) and throttleBucket latency with 1,000,000 and 1,000 buckets (constructed state), and index memory per bucket`,
  async run(context) {
    const load = loadNote();
    const rig = new BullmqRig(context.redisUrl, `${context.prefix}-stats`, context.redis);
    const keys = new ThrottleKeys(rig.prefix);
    const admin = new ThrottleAdmin({ connection: context.redisUrl, prefix: rig.prefix });
    const measured: Measured[] = [];
    try {
      // A real, idle ThrottledWorker (no processor) declares both throttles, so that the admin finds them.
      const worker = rig.track(new ThrottledWorker('stats', null, {
        connection: rig.connection, prefix: rig.prefix, throttles: CASES.map((c) => c.throttle),
      }));
      await worker.waitUntilReady();
      for (const testCase of CASES) {
        const before = await usedMemory(context.redis);
        const startedAt = Date.now();
        const state = await constructStatsState(context.redis, keys, {
          name: testCase.throttle.name, queue: 'stats', windowMs: WINDOW_MS, max: MAX, buckets: testCase.buckets,
          fullEvery: 10, waitingEvery: 100, counters: COUNTERS, tokensPerCounter: TOKENS_PER_COUNTER, seed: testCase.buckets,
        });
        const usedMemoryDelta = (await usedMemory(context.redis)) - before;
        context.log(`  ${testCase.label}: constructed in ${Date.now() - startedAt} ms (${state.full} full, ${state.waitingBuckets} waiting)`);
        await verify(admin, testCase, state);
        const k = { ...keys.throttleIndexes(testCase.throttle.name), ...keys.queue('stats').throttleStats(testCase.throttle.name) };
        measured.push({
          testCase, state,
          stats: { latencies: [], redisUsec: 0 },
          bucket: { latencies: [], redisUsec: 0 },
          memory: {
            activeBytes: await memoryUsage(context, k.active),
            fullBytes: await memoryUsage(context, k.full),
            waitingBytes: await memoryUsage(context, k.waiting),
            activeEncoding: String(await context.redis.call('OBJECT', 'ENCODING', k.active)),
            usedMemoryDelta,
          },
        });
      }
      // Both cases in turn, a quarter of the calls at a time, so that drift on a shared machine hits both alike.
      const bucketKey = (testCase: Case, i: number): string[] =>
        [customerKey(i % 2 === 0 ? (i / 2) % COUNTERS : testCase.buckets - 1 - ((i * 7919) % (testCase.buckets - COUNTERS)))];
      for (const m of measured) {
        for (let i = 0; i < WARM_UP; i++) {
          await admin.throttleStats(m.testCase.throttle.name, { top: TOP });
          await admin.throttleBucket(m.testCase.throttle.name, bucketKey(m.testCase, i));
        }
      }
      const perRound = CALLS / ROUNDS;
      for (let round = 0; round < ROUNDS; round++) {
        for (const m of measured) {
          const name = m.testCase.throttle.name;
          await timeCalls(context, perRound, () => admin.throttleStats(name, { top: TOP }), m.stats);
          await timeCalls(context, perRound, (i) => admin.throttleBucket(name, bucketKey(m.testCase, round * perRound + i)), m.bucket);
        }
      }
      for (const m of measured) await verifyWithLua(context, rig.prefix, admin, m.testCase, m.state);
      rig.assertNoErrors('throttleStats');
    } finally {
      await admin.close();
      await rig.close();
    }

    const rows: Row[] = [];
    const callRow = (m: Measured, call: string, timing: Timing): Row => ({
      case: m.testCase.label, call, calls: timing.latencies.length,
      p50Ms: round(percentile(timing.latencies, 50), 3),
      p99Ms: round(percentile(timing.latencies, 99), 3),
      maxMs: round(Math.max(...timing.latencies), 3),
      redisUsPerCall: round(timing.redisUsec / timing.latencies.length, 1),
      activeBytesPerBucket: null, indexBytesPerBucket: null, usedMemoryPerBucket: null, encoding: null,
    });
    for (const m of measured) {
      rows.push(callRow(m, `throttleStats(top ${TOP})`, m.stats));
      rows.push(callRow(m, 'throttleBucket(key)', m.bucket));
      rows.push({
        case: m.testCase.label, call: 'index memory (MEMORY USAGE)', calls: null, p50Ms: null, p99Ms: null, maxMs: null, redisUsPerCall: null,
        activeBytesPerBucket: round(m.memory.activeBytes / m.testCase.buckets, 1),
        indexBytesPerBucket: round((m.memory.activeBytes + m.memory.fullBytes + m.memory.waitingBytes) / m.testCase.buckets, 1),
        usedMemoryPerBucket: round(m.memory.usedMemoryDelta / m.testCase.buckets, 1),
        encoding: m.memory.activeEncoding,
      });
    }
    const [big, small] = measured;
    const ratio = (pick: (m: Measured) => number[]) => round(percentile(pick(big), 99) / percentile(pick(small), 99), 2);
    const statsRatio = ratio((m) => m.stats.latencies);
    const bucketRatio = ratio((m) => m.bucket.latencies);
    return {
      title: `ThrottleAdmin read latency against the number of buckets (keyed throttle, ${MAX} per 1 h; constructed state)`,
      columns: [
        { key: 'case', label: 'case' },
        { key: 'call', label: 'call' },
        { key: 'calls', label: 'calls' },
        { key: 'p50Ms', label: 'p50 ms', digits: 3 },
        { key: 'p99Ms', label: 'p99 ms', digits: 3 },
        { key: 'maxMs', label: 'max ms', digits: 3 },
        { key: 'redisUsPerCall', label: 'Redis µs/call', digits: 1 },
        { key: 'activeBytesPerBucket', label: ':active B/bucket', digits: 1 },
        { key: 'indexBytesPerBucket', label: ':active+:full+:waiting B/bucket', digits: 1 },
        { key: 'usedMemoryPerBucket', label: 'used_memory Δ B/bucket', digits: 1 },
        { key: 'encoding', label: ':active encoding' },
      ],
      rows,
      notes: [
        `p99 with 1,000,000 buckets / with 1,000: throttleStats ${statsRatio}, throttleBucket ${bucketRatio}.`,
        'Constructed state: nothing was delivered. The keys the delivery script keeps were written directly (pipelined ZADD/HSET,',
        '  1,000 members per command) in the format of lua/includes/throttleStats.lua and windowCounter.lua (docs/keys.md):',
        '  :active with every bucket scored 1 min to 1 h ahead, :full with every 10th, :waiting with every 100th (1–100 jobs, one with 1,000),',
        `  :stats totals, :recent (71 slots of 1 min), and ${COUNTERS} real counter hashes (${TOKENS_PER_COUNTER} tokens, or ${MAX} for the full ones).`,
        '  Before timing, the admin\'s answers were checked against it (active, at limit, waiting, top bucket, last window, counted per bucket);',
        '  after, a Grantor grant (the same counter Lua) was refused on a constructed full bucket until its roomAt, and counted on one with room.',
        'An idle ThrottledWorker (no processor) on queue \'stats\' declares both throttles, so the admin finds them in the registry.',
        `${CALLS} timed calls per row, sequential on one connection, after ${WARM_UP} warm-up calls; the two cases alternate in ${ROUNDS} rounds of ${CALLS / ROUNDS} calls each.`,
        `throttleBucket asks, in turn, for a bucket with a counter hash and one without (its ${MAX}-per-1h counter is then absent).`,
        'Redis µs/call: INFO commandstats usec of the scripts (EVALSHA, with the commands they run) and plain reads the admin sends, over the timed calls, but the registry\'s HGETALL (an idle worker heartbeat may add a few).',
        '  The indexes are skiplists: ZCOUNT, ZREVRANGEBYSCORE ... LIMIT and ZSCORE are O(log N) on the server, so the cases may differ by a few µs',
        '  of Redis time per call (a deeper skiplist, colder caches); no call reads anything per bucket.',
        'Memory: MEMORY USAGE ... SAMPLES 0 (exact) of each index / buckets; used_memory Δ is the whole construction (counters, :recent included) / buckets.',
        'Memory per bucket of :active and :full lasts while the bucket is active: once every W/60 (W the longest window) while the throttle delivers,',
        '  the delivery script drops the members whose score has passed, and both keys lapse about 2 × W + 60 s after its last delivery',
        '  (lua/includes/throttleStats.lua; docs/keys.md, "What stays behind"). Every constructed score lies 1 min to 1 h ahead: none is dropped during the run.',
        `${load} at start.`,
      ],
    };
  },
};
