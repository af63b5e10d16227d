import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { Grantor } from '../src/grant/Grantor';
import type { Delivery } from '../src/grant/types';
import { UNKEYED_BUCKET } from '../src/keys/keyEncoding';
import { TestClock } from '../test/support/testClock';
import { fillBurst, fillSpreadRealTime, fillSpreadShifted } from './support/fill';
import { deleteKeysUnder, keysUnder } from './support/keys';
import { footprint, usedMemory } from './support/memory';
import { constructWorstCaseCounter, slotGeometryUs } from './support/worstCaseCounter';
import { concurrencyBucketBytes } from './support/concurrencyMemory';
import type { Benchmark, BenchmarkContext, Row } from './types';

const KB = 1024;
const SMALL = { max: 100, windowMs: 1000, label: '100 per 1s', target: 2 * KB };
const LARGE = { max: 100_000, windowMs: 3_600_000, label: '100,000 per 1h', target: 32 * KB };
const MANY_BUCKETS = 10_000;
const TOKENS_EACH = 3;

type Fill = (grantor: Grantor, delivery: Delivery, context: BenchmarkContext, key: string) => Promise<void>;

interface Case {
  limit: string;
  fill: string;
  max: number;
  windowMs: number;
  target: number;
  shiftedClock?: boolean;
  run: Fill;
}

const CASES: Case[] = [
  { ...SMALL, limit: SMALL.label, fill: 'burst: 100 in one call',
    run: async (g, d) => { await fillBurst(g, d, 100); } },
  { ...SMALL, limit: SMALL.label, fill: 'spread: 1 per 9 ms slot over 0.9 s',
    run: async (g, d) => { await fillSpreadRealTime(g, d, 100, 900, 100); } },
  { ...SMALL, limit: SMALL.label, fill: 'constructed worst case (HSET)',
    run: async (_g, _d, c, key) => { await constructWorstCaseCounter(c.redis, key, SMALL.max, SMALL.windowMs); } },
  { ...LARGE, limit: LARGE.label, fill: 'burst: 100,000 in 100 calls',
    run: async (g, d) => { await fillBurst(g, d, 100_000); } },
  { ...LARGE, max: 100_000, windowMs: 3000, limit: '100,000 per 3s (stands in for 1h)', fill: 'spread: 1,000 per 27 ms slot over 2.7 s',
    run: async (g, d) => { await fillSpreadRealTime(g, d, 100_000, 2700, 100); } },
  { ...LARGE, limit: LARGE.label, fill: 'spread over 0.99 h (shifted test clock)', shiftedClock: true,
    run: async (g, d) => { await fillSpreadShifted(g, clockOf(g), d, 100_000, 0.99 * LARGE.windowMs, 2000); } },
  { ...LARGE, limit: LARGE.label, fill: 'constructed worst case (HSET)',
    run: async (_g, _d, c, key) => { await constructWorstCaseCounter(c.redis, key, LARGE.max, LARGE.windowMs); } },
];

const clocks = new WeakMap<Grantor, TestClock>();
function clockOf(grantor: Grantor): TestClock {
  const clock = clocks.get(grantor);
  if (!clock) throw new Error('this fill needs a Grantor built on a TestClock');
  return clock;
}

function verdict(bytesPerBucket: number, target: number): string {
  return bytesPerBucket <= target ? 'pass' : 'FAIL';
}

async function measureOne(context: BenchmarkContext, grantor: Grantor, testCase: Case, index: number): Promise<Row> {
  const throttle = Throttle.named(`case${index}`).limit(testCase.max, testCase.windowMs);
  const base = grantor.keys.throttleBase(throttle.name);
  await testCase.run(grantor, [{ throttle }], context, grantor.keys.windowCounter(throttle.name, UNKEYED_BUCKET, testCase.windowMs));
  const found = await footprint(context.redis, base);
  await deleteKeysUnder(context.redis, base);
  context.log(`  ${testCase.limit}, ${testCase.fill}: ${found.bytes} B, ${found.fields} fields`);
  return {
    limit: testCase.limit, fill: testCase.fill, buckets: 1, tokensPerBucket: found.counted,
    fieldsPerBucket: found.fields, encoding: found.encoding, memoryUsage: found.bytes, usedMemoryDelta: null,
    target: testCase.target, result: verdict(found.bytes, testCase.target),
  };
}

/** Many small buckets: what each costs the server, key overhead included (used_memory before and after). */
async function measureMany(context: BenchmarkContext, grantor: Grantor): Promise<Row> {
  const throttle = Throttle.named('many').key([Key.data('customer')]).limit(100, '1m');
  const base = grantor.keys.throttleBase(throttle.name);
  const before = await usedMemory(context.redis);
  for (let round = 0; round < TOKENS_EACH; round++) {
    for (let from = 0; from < MANY_BUCKETS; from += 500) {
      await grantor.grant(Array.from({ length: 500 }, (_, i): Delivery => [{ throttle, key: [`c${from + i}`] }]));
    }
  }
  const after = await usedMemory(context.redis);
  const found = await footprint(context.redis, base);
  await deleteKeysUnder(context.redis, base);
  const perBucket = Math.round((after - before) / MANY_BUCKETS);
  const usagePerBucket = Math.round(found.bytes / found.keys);
  context.log(`  ${MANY_BUCKETS} buckets: ${perBucket} B/bucket (used_memory), ${usagePerBucket} B (MEMORY USAGE)`);
  return {
    limit: '100 per 1m, keyed', fill: `${TOKENS_EACH} tokens in each of ${MANY_BUCKETS.toLocaleString('en-US')} buckets`,
    buckets: found.keys, tokensPerBucket: found.counted / found.keys, fieldsPerBucket: found.fields / found.keys,
    encoding: found.encoding, memoryUsage: usagePerBucket, usedMemoryDelta: perBucket,
    target: SMALL.target, result: verdict(Math.max(perBucket, usagePerBucket), SMALL.target),
  };
}

const RATE_TARGET = 200;

/** Many rate buckets (one STRING each, lua/includes/rateCounter.lua): what each costs the server, key included. */
async function measureManyRates(context: BenchmarkContext, grantor: Grantor): Promise<Row> {
  // 1 per minute: each bucket's TAT stays ahead (and its key alive) while it is measured.
  const throttle = Throttle.named('many-rates').key([Key.data('customer')]).rate(1, '1m');
  const base = grantor.keys.throttleBase(throttle.name);
  const before = await usedMemory(context.redis);
  for (let from = 0; from < MANY_BUCKETS; from += 500) {
    await grantor.grant(Array.from({ length: 500 }, (_, i): Delivery => [{ throttle, key: [`c${from + i}`] }]));
  }
  const after = await usedMemory(context.redis);
  const sample = grantor.keys.rateCounter(throttle.name, (await keysUnder(context.redis, base))[0].slice(`${base}:b:`.length, -':r'.length));
  const usage = Number(await context.redis.call('MEMORY', 'USAGE', sample, 'SAMPLES', '0'));
  const encoding = String(await context.redis.call('OBJECT', 'ENCODING', sample));
  const buckets = (await keysUnder(context.redis, base)).length;
  await deleteKeysUnder(context.redis, base);
  const perBucket = Math.round((after - before) / MANY_BUCKETS);
  context.log(`  ${MANY_BUCKETS} rate buckets: ${perBucket} B/bucket (used_memory), ${usage} B (MEMORY USAGE of one)`);
  return {
    limit: 'rate 1 per 1m, keyed', fill: `1 token in each of ${MANY_BUCKETS.toLocaleString('en-US')} buckets`,
    buckets, tokensPerBucket: 1, fieldsPerBucket: 1, encoding, memoryUsage: usage, usedMemoryDelta: perBucket,
    target: RATE_TARGET, result: verdict(Math.max(perBucket, usage), RATE_TARGET),
  };
}

export const bucketMemory: Benchmark = {
  name: 'bucketMemory',
  description: 'Redis memory of a bucket at its limit (MEMORY USAGE of its keys) and of many small buckets (used_memory)',
  async run(context) {
    const production = new Grantor({ connection: context.redisUrl, prefix: context.prefix });
    const clock = new TestClock();
    const shifted = new Grantor({ connection: context.redisUrl, prefix: context.prefix }, clock.internals());
    clocks.set(shifted, clock);
    const rows: Row[] = [];
    try {
      for (const [i, testCase] of CASES.entries()) {
        rows.push(await measureOne(context, testCase.shiftedClock ? shifted : production, testCase, i));
      }
      rows.push(await measureMany(context, production));
      // Key names as a deployment has them ("bull::throttle:{bull}name:b:<bucket>:r"), not the bench's long prefix.
      const shortNames = new Grantor({ connection: context.redisUrl, prefix: context.prefix, throttlePrefix: `bm${process.pid % 1000}` });
      try {
        rows.push(await measureManyRates(context, shortNames));
      } finally {
        await shortNames.close();
      }
      const slots = await concurrencyBucketBytes(context, 2_000);
      context.log(`  concurrency: ${slots.counter} B counter + ${slots.indexField} B index field per bucket with a job in flight`);
      rows.push({
        limit: 'concurrency 3, keyed', fill: `1 job in flight in each of ${slots.counted.toLocaleString('en-US')} buckets`,
        buckets: slots.counted, tokensPerBucket: 1, fieldsPerBucket: 2, encoding: slots.encoding, memoryUsage: slots.counter + slots.indexField,
        usedMemoryDelta: null, target: null, result: 'no target; an idle bucket holds no key',
      });
    } finally {
      await production.close();
      await shifted.close();
    }
    return {
      title: 'Bucket memory at the limit',
      columns: [
        { key: 'limit', label: 'limit' },
        { key: 'fill', label: 'fill' },
        { key: 'buckets', label: 'buckets' },
        { key: 'tokensPerBucket', label: 'tokens/bucket', digits: 1 },
        { key: 'fieldsPerBucket', label: 'fields/bucket', digits: 1 },
        { key: 'encoding', label: 'encoding' },
        { key: 'memoryUsage', label: 'MEMORY USAGE B/bucket' },
        { key: 'usedMemoryDelta', label: 'used_memory Δ B/bucket' },
        { key: 'target', label: 'target B' },
        { key: 'result', label: 'result' },
      ],
      rows,
      notes: [
        'Targets: ≤ 2 KB per bucket for 100/1s, ≤ 32 KB for 100,000/1h; the many-buckets row is held to the 2 KB target; a rate bucket ≤ 200 B.',
        'fields include the header h ("n lo hi x"). A bucket with one limit is one HASH key; MEMORY USAGE is exact (SAMPLES 0).',
        `Release-index fields are bounded by the slot count, not by N (slot = W/220: ${slotGeometryUs(1000).slotUs} µs for 1s, ${slotGeometryUs(3_600_000).slotUs} µs for 1h).`,
        'The 3 s row spreads 100,000 over up to 100 slots in real time (late timers merge some), as an hour of traffic would over 1 h.',
        'The shifted-clock row uses the test build of the scripts (test/support/testClock.ts): grants spread over the hour.',
        'Constructed worst case: the hash written directly with HSET, with the most release indices the script can leave.',
        'Concurrency: MEMORY USAGE of one bucket\'s counter HASH (# and the job\'s entry) plus the job\'s share of the queue\'s in-flight index;',
        '  the bench\'s long prefix is in every key and entry. A bucket with no job in flight holds no key.',
      ],
    };
  },
};
