import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import { Cost } from '../src/declarations/Cost';
import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { round, summarize } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const JOBS = 10_000;
const CUSTOMERS = 1000;
const CONCURRENCY = 50;
const RUNS = 3;
const DRAIN_TIMEOUT_MS = 180_000;

/** One keyed throttle per limit kind, each far from binding, so that what is timed is what the kind costs. */
const KINDS = {
  'bullmq Worker (no throttle)': null,
  'window: limit(1,000,000, 1s)': Throttle.named('per-customer').key([Key.data('customer')]).limit(1_000_000, '1s'),
  'rate: rate(1,000,000, 1s, burst 1,000,000)': Throttle.named('per-customer').key([Key.data('customer')]).rate(1_000_000, '1s', { burst: 1_000_000 }),
  'concurrency: concurrency(1,000)': Throttle.named('per-customer').key([Key.data('customer')]).concurrency(1_000),
  'cost: cost(data.tokens) limit(100,000,000, 1s)': Throttle.named('per-customer').key([Key.data('customer')]).cost(Cost.data('tokens')).limit(100_000_000, '1s'),
} as const;
type KindName = keyof typeof KINDS;

async function drain(context: BenchmarkContext, kind: KindName, index: number, run: number): Promise<number> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-kind${index}-${run}`, context.redis);
  try {
    const queue = rig.queue('kinds');
    await addBacklog(queue, JOBS, (i) => ({ customer: `c${i % CUSTOMERS}`, tokens: 1 + (i % 97) }));
    let first = 0;
    let last = 0;
    let completed = 0;
    const processor = async (): Promise<void> => { if (first === 0) first = performance.now(); };
    const options = { connection: rig.connection, prefix: rig.prefix, concurrency: CONCURRENCY };
    const throttle = KINDS[kind];
    const worker: Worker = rig.track(throttle === null
      ? new Worker('kinds', processor, options)
      : new ThrottledWorker('kinds', processor, { ...options, throttles: [throttle] }));
    worker.on('completed', () => { if (++completed === JOBS) last = performance.now(); });
    await waitUntil(() => completed >= JOBS || rig.errors.length > 0, DRAIN_TIMEOUT_MS, `${kind} run ${run} (completed ${completed})`, 50);
    rig.assertNoErrors(`${kind} run ${run}`);
    return (JOBS * 1000) / (last - first);
  } finally {
    await rig.close();
  }
}

export const deliveryByKind: Benchmark = {
  name: 'deliveryByKind',
  description: 'jobs/s of ThrottledWorker with one throttle of each limit kind (never binding), against the sliding window, in one run',
  async run(context) {
    const load = loadNote();
    const names = Object.keys(KINDS) as KindName[];
    const results = new Map<KindName, number[]>(names.map((name) => [name, []]));
    for (let run = 1; run <= RUNS; run++) {
      for (const [index, name] of names.entries()) {
        const jobsPerSecond = await drain(context, name, index, run);
        context.log(`  ${name} run ${run}: ${Math.round(jobsPerSecond)} jobs/s`);
        results.get(name)!.push(jobsPerSecond);
      }
    }
    const median = (name: KindName) => summarize(results.get(name)!).median;
    const windowMedian = median(names[1]);
    const plainMedian = median(names[0]);
    const rows: Row[] = names.map((name) => ({
      kind: name,
      runs: results.get(name)!.map((r) => Math.round(r).toLocaleString('en-US')).join(' / '),
      median: Math.round(median(name)),
      vsWindow: round(median(name) / windowMedian, 3),
      vsPlain: round(median(name) / plainMedian, 3),
    }));
    return {
      title: `Delivery throughput by limit kind (${JOBS.toLocaleString('en-US')} jobs, concurrency ${CONCURRENCY}, ${CUSTOMERS.toLocaleString('en-US')} keyed buckets)`,
      columns: [
        { key: 'kind', label: 'throttle (keyed on data.customer)' },
        { key: 'runs', label: 'jobs/s per run' },
        { key: 'median', label: 'median jobs/s' },
        { key: 'vsWindow', label: 'vs window', digits: 3 },
        { key: 'vsPlain', label: 'vs bullmq Worker', digits: 3 },
      ],
      rows,
      notes: [
        'Each run drains a backlog added before the worker starts (addBulk), on its own queue and prefix; trivial processor; jobs/s from the first',
        `  processor call to the last "completed" event. Kinds alternate, ${RUNS} runs each; no target (the window row is the reference).`,
        'concurrency(n) costs one release per ended job (lua/releaseInFlight-1.lua, batched per worker) and an in-flight entry per delivery.',
        `${load} at start.`,
      ],
    };
  },
};
