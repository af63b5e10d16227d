import { Job, Worker } from 'bullmq';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { rateStats } from './support/rates';
import { round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const CONCURRENCY = 50;
const LIMITS = [
  { max: 1000, windowMs: 1000, jobs: 5000, label: '1,000 per 1 s' },
  { max: 100, windowMs: 100, jobs: 5000, label: '100 per 100 ms' },
];
const WORKER_COUNTS = [1, 2];
const KINDS = ['bullmq limiter', 'ThrottledWorker'] as const;
type Kind = (typeof KINDS)[number];
type Limit = (typeof LIMITS)[number];

/** Drains a backlog of limit.jobs with `workers` workers of `kind` held to the limit; resolves to every job's processedOn. */
async function deliveries(context: BenchmarkContext, limit: Limit, kind: Kind, workers: number, label: string): Promise<number[]> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${label}`, context.redis);
  try {
    const queue = rig.queue('accuracy');
    await addBacklog(queue, limit.jobs, (i) => ({ i }));
    const processedOn: number[] = [];
    let missing = 0;
    const processor = async (job: Job): Promise<void> => {
      if (job.processedOn === undefined) missing++;
      else processedOn.push(job.processedOn);
    };
    const options = { connection: rig.connection, prefix: rig.prefix, concurrency: CONCURRENCY };
    const throttle = Throttle.named('accuracy').limit(limit.max, limit.windowMs);
    for (let w = 0; w < workers; w++) {
      rig.track(kind === 'bullmq limiter'
        ? new Worker('accuracy', processor, { ...options, limiter: { max: limit.max, duration: limit.windowMs } })
        : new ThrottledWorker('accuracy', processor, { ...options, throttles: [throttle] }));
    }
    // At N per W the backlog takes about jobs/N windows; allow three times that and 30 s to start.
    const timeoutMs = 3 * (limit.jobs / limit.max) * limit.windowMs + 30_000;
    const count = () => processedOn.length + missing;
    await waitUntil(() => count() >= limit.jobs || rig.errors.length > 0, timeoutMs,
      `${label}: ${limit.jobs} deliveries`, 50)
      .catch((error: Error) => { throw new Error(`${error.message} (got ${count()})`); });
    rig.assertNoErrors(label);
    if (missing > 0) throw new Error(`${label}: ${missing} job(s) reached the processor without processedOn`);
    if (processedOn.length !== limit.jobs) throw new Error(`${label}: ${processedOn.length} deliveries of ${limit.jobs} jobs`);
    return processedOn;
  } finally {
    await rig.close();
  }
}

function row(limit: Limit, kind: Kind, workers: number, times: readonly number[]): Row {
  const stats = rateStats(times, limit.max, limit.windowMs);
  const nominal = (limit.max * 1000) / limit.windowMs;
  return {
    limit: limit.label,
    kind,
    workers,
    jobs: stats.deliveries,
    mostInWindow: stats.mostInWindow,
    timesN: round(stats.mostInWindow / limit.max, 3),
    withinN: stats.mostInWindow <= limit.max,
    spanS: round(stats.spanMs / 1000, 2),
    overallPerSecond: Math.round(stats.overallPerSecond),
    sustainedPerSecond: Math.round(stats.sustainedPerSecond),
    sustainedPercent: round((100 * stats.sustainedPerSecond) / nominal, 1),
  };
}

export const limiterAccuracy: Benchmark = {
  name: 'limiterAccuracy',
  description: "most deliveries in any window and achieved rate: bullmq's built-in limiter against ThrottledWorker, same limits, same run",
  async run(context) {
    const load = loadNote();
    const rows: Row[] = [];
    for (const limit of LIMITS) {
      for (const workers of WORKER_COUNTS) {
        for (const kind of KINDS) {
          const label = `${limit.max}per${limit.windowMs}ms-${kind === 'bullmq limiter' ? 'bullmq' : 'throttled'}-${workers}w`;
          const result = row(limit, kind, workers, await deliveries(context, limit, kind, workers, label));
          context.log(`  ${limit.label}, ${kind}, ${workers} worker(s): most in a window ${result.mostInWindow}, sustained ${result.sustainedPerSecond}/s`);
          rows.push(result);
        }
      }
    }
    return {
      title: "Limiter accuracy: bullmq's limiter vs ThrottledWorker (most deliveries in any window of W)",
      columns: [
        { key: 'limit', label: 'limit N per W' },
        { key: 'kind', label: 'worker' },
        { key: 'workers', label: 'workers' },
        { key: 'jobs', label: 'deliveries' },
        { key: 'mostInWindow', label: 'most in any W' },
        { key: 'timesN', label: '× N', digits: 3 },
        { key: 'withinN', label: '≤ N' },
        { key: 'spanS', label: 'first→last s', digits: 2 },
        { key: 'overallPerSecond', label: 'overall /s' },
        { key: 'sustainedPerSecond', label: 'sustained /s' },
        { key: 'sustainedPercent', label: 'sustained % of N/W', digits: 1 },
      ],
      rows,
      notes: [
        `Each row: a backlog (5,000 jobs) added with addBulk before the workers start, concurrency ${CONCURRENCY} per worker, trivial processor;`,
        "  'workers' Workers in this process on the same queue (bullmq's limiter is per queue; ThrottledWorkers share the named throttle).",
        "bullmq limiter: Worker({ limiter: { max: N, duration: W } }); ThrottledWorker: Throttle.named('accuracy').limit(N, W).",
        'most in any W: the largest number of processedOn values with t_last - t_first < W (mostInAnyWindow).',
        'overall /s: deliveries / (last - first processedOn); a first window\'s burst of N lifts it above N/W by about N/span.',
        'sustained /s: N / mean(t[i+N] - t[i]) over the sorted processedOn: the pace once saturated.',
        "Clocks: bullmq's processedOn is the worker's Date.now() (passed to its moveToActive script); ThrottledWorker's is the",
        '  Redis clock (TIME inside the delivery script). Everything here runs on one machine, so both are the same clock.',
        `Fixed sizes (BENCH_DURATION_MS is not used). ${load} at start.`,
      ],
    };
  },
};
