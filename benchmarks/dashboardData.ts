import http from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createDashboardHandler, DashboardHandler } from '../src/dashboard/server/dashboardHandler';
import type { WireBucketPage, WireOverviewWithHistory } from '../src/dashboard/wire';
import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottleKeys } from '../src/keys/ThrottleKeys';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { BullmqRig } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { constructStatsState, customerKey, StatsState } from './support/statsState';
import { percentile, round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const WINDOW_MS = 3_600_000;
const MAX = 100;
const CALLS = 1000;
const ROUNDS = 20;
const WARM_UP = 20;
const COUNTERS = 20;
const QUEUE = 'dash';

interface Case {
  label: string;
  buckets: number;
}

const CASES: Case[] = [
  { label: '1,000,000 buckets (constructed state)', buckets: 1_000_000 },
  { label: '1,000 buckets (constructed state)', buckets: 1_000 },
];

interface Served {
  testCase: Case;
  rig: BullmqRig;
  state: StatsState;
  handler: DashboardHandler;
  server: http.Server;
  url: string;
  overview: number[];
  bucket: number[];
  redisUsec: number;
}

/** Every command's usec in INFO commandstats, summed: the Redis time of what ran between two readings. */
function totalUsec(commandstats: string): number {
  let usec = 0;
  for (const match of commandstats.matchAll(/^cmdstat_[^:]+:calls=\d+,usec=(\d+)/gm)) usec += Number(match[1]);
  return usec;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** One case: its own prefix, an idle ThrottledWorker declaring the throttle, the constructed state, the dashboard on node:http. */
async function serve(context: BenchmarkContext, testCase: Case, index: number): Promise<Served> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${index}`, context.redis);
  const throttle = Throttle.named('per-customer').key([Key.data('customer')]).limit(MAX, WINDOW_MS);
  const worker = rig.track(new ThrottledWorker(QUEUE, null, { connection: rig.connection, prefix: rig.prefix, throttles: [throttle] }));
  await worker.waitUntilReady();
  const startedAt = Date.now();
  const state = await constructStatsState(context.redis, new ThrottleKeys(rig.prefix), {
    name: throttle.name, queue: QUEUE, windowMs: WINDOW_MS, max: MAX, buckets: testCase.buckets,
    fullEvery: 10, waitingEvery: 100, counters: COUNTERS, tokensPerCounter: 40, seed: testCase.buckets,
  });
  context.log(`  ${testCase.label}: constructed in ${Date.now() - startedAt} ms`);
  // Sampling once an hour: every timed request then reads Redis itself rather than join the sampler's read.
  const handler = createDashboardHandler({ connection: context.redisUrl, prefix: rig.prefix, sampleEveryMs: 3_600_000 });
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { testCase, rig, state, handler, server, url, overview: [], bucket: [], redisUsec: 0 };
}

/** The timings are of real answers: the endpoint reads back what was constructed. */
async function verify(s: Served): Promise<void> {
  const overview = await getJson<WireOverviewWithHistory>(`${s.url}/api/overview`);
  const t = overview.throttles.find((x) => x.name === 'per-customer');
  const problems: string[] = [];
  if (!t) problems.push('no throttle per-customer');
  else {
    if (t.activeBuckets !== s.state.active) problems.push(`activeBuckets ${t.activeBuckets} ≠ ${s.state.active}`);
    if (t.bucketsAtLimit !== s.state.full) problems.push(`bucketsAtLimit ${t.bucketsAtLimit} ≠ ${s.state.full}`);
    if (t.waiting !== s.state.waitingJobs) problems.push(`waiting ${t.waiting} ≠ ${s.state.waitingJobs}`);
    if (t.topBuckets[0]?.key?.[0] !== s.state.top.key) problems.push(`top bucket ${JSON.stringify(t.topBuckets[0])} ≠ ${s.state.top.key}`);
    // The chart's per-bucket figure: the busiest of the top 3 waiting buckets, each read one by one.
    const busiest = overview.busiest['per-customer'] ?? [];
    const topKeys = t.topBuckets.slice(0, 3).map((b) => JSON.stringify(b.key));
    if (busiest.length !== 1 || !topKeys.includes(JSON.stringify(busiest[0].key))) problems.push(`busiest ${JSON.stringify(busiest)} is not one of the top 3 waiting buckets ${topKeys.join(', ')}`);
  }
  const [key, counted] = [...s.state.counted][1];
  const bucket = await getJson<WireBucketPage>(`${s.url}/api/bucket?throttle=per-customer&key=${encodeURIComponent(JSON.stringify([key]))}`);
  if (bucket.bucket.limits[0].counted !== counted) problems.push(`bucket ${key} counted ${bucket.bucket.limits[0].counted} ≠ ${counted}`);
  if (problems.length > 0) throw new Error(`${s.testCase.label}: the dashboard does not read back the constructed state: ${problems.join('; ')}`);
}

async function timed(into: number[], url: string): Promise<void> {
  const t0 = performance.now();
  await getJson(url);
  into.push(performance.now() - t0);
}

async function close(s: Served): Promise<void> {
  await s.handler.close();
  s.server.closeAllConnections();
  await new Promise((resolve) => s.server.close(resolve));
  await s.rig.close();
}

export const dashboardData: Benchmark = {
  name: 'dashboardData',
  description: 'The dashboard handler\'s data endpoint (GET api/overview) and bucket endpoint (GET api/bucket) latency over HTTP with 1,000,000 and 1,000 buckets (constructed state)',
  async run(context) {
    const load = loadNote();
    const served: Served[] = [];
    try {
      for (const [i, testCase] of CASES.entries()) served.push(await serve(context, testCase, i));
      for (const s of served) await verify(s);
      const bucketUrl = (s: Served, i: number) => `${s.url}/api/bucket?throttle=per-customer&key=${encodeURIComponent(JSON.stringify([customerKey(i % 2 === 0 ? i % COUNTERS : s.testCase.buckets - 1 - (i % 997))]))}`;
      for (const s of served) {
        for (let i = 0; i < WARM_UP; i++) {
          await getJson(`${s.url}/api/overview`);
          await getJson(bucketUrl(s, i));
        }
      }
      // The cases alternate in rounds, so that drift on a shared machine hits both alike.
      const perRound = CALLS / ROUNDS;
      for (let round = 0; round < ROUNDS; round++) {
        for (const s of served) {
          const before = totalUsec(await context.redis.info('commandstats'));
          for (let i = 0; i < perRound; i++) await timed(s.overview, `${s.url}/api/overview`);
          s.redisUsec += totalUsec(await context.redis.info('commandstats')) - before;
          for (let i = 0; i < perRound; i++) await timed(s.bucket, bucketUrl(s, round * perRound + i));
        }
      }
      for (const s of served) s.rig.assertNoErrors('dashboardData');
    } finally {
      for (const s of served) await close(s).catch((error: unknown) => context.log(`cleanup: ${String(error)}`));
    }
    const row = (s: Served, call: string, latencies: number[], redisUsPerCall: number | null): Row => ({
      case: s.testCase.label, call, calls: latencies.length,
      p50Ms: round(percentile(latencies, 50), 3),
      p99Ms: round(percentile(latencies, 99), 3),
      maxMs: round(Math.max(...latencies), 3),
      redisUsPerCall: redisUsPerCall === null ? null : round(redisUsPerCall, 1),
    });
    const rows = served.flatMap((s) => [
      row(s, 'GET api/overview', s.overview, s.redisUsec / s.overview.length),
      row(s, 'GET api/bucket', s.bucket, null),
    ]);
    const [big, small] = served;
    return {
      title: 'Dashboard endpoints over HTTP against the number of buckets (keyed throttle, 100 per 1 h; constructed state)',
      columns: [
        { key: 'case', label: 'case' },
        { key: 'call', label: 'call' },
        { key: 'calls', label: 'calls' },
        { key: 'p50Ms', label: 'p50 ms', digits: 3 },
        { key: 'p99Ms', label: 'p99 ms', digits: 3 },
        { key: 'maxMs', label: 'max ms', digits: 3 },
        { key: 'redisUsPerCall', label: 'Redis µs/call', digits: 1 },
      ],
      rows,
      notes: [
        `api/overview p99 with 1,000,000 buckets: ${round(percentile(big.overview, 99), 3)} ms (target: under 50 ms); with 1,000: ${round(percentile(small.overview, 99), 3)} ms.`,
        'api/overview: admin.live(), then queueStats of each live queue and throttleStats(top 10) of each live throttle, then throttleBucket',
        '  of its top 3 waiting buckets (the chart\'s busiest bucket), as JSON with the sampled history; api/bucket: throttleBucket and the',
        '  jobs waiting on the bucket (none here: the state holds no held classes).',
        'State as in the throttleStats benchmark (benchmarks/support/statsState.ts): every bucket in :active, every 10th in :full, every 100th',
        '  in :waiting, 20 real counters; checked through the endpoints before timing (active, at limit, waiting, top bucket, counted).',
        'Each case has its own prefix, an idle ThrottledWorker declaring the throttle, and its own handler on node:http (127.0.0.1, a free port).',
        `${CALLS} sequential requests per endpoint and case through fetch (HTTP, JSON parse included), after ${WARM_UP} warm-up requests; the cases`,
        `  alternate in ${ROUNDS} rounds. The handler samples once an hour here, so that no timed request joins a sampler read.`,
        'Redis µs/call: INFO commandstats usec of every command during the api/overview requests, / requests (idle workers\' heartbeats included).',
        `${load} at start.`,
      ],
    };
  },
};
