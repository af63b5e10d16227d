import { setTimeout as sleep } from 'node:timers/promises';
import { Job } from 'bullmq';
import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { getThrottledCount } from '../src/worker/getThrottledCount';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { percentile, round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const BACKLOG = 100_000;
const BIG_LIMIT = 5;
const CONCURRENCY = 20;
/** Jobs of other customers, added BATCH at a time every PACE_MS: 2,000 jobs/s offered for 1 s. */
const OTHERS = 2000;
const BATCH = 100;
const PACE_MS = 50;
const SETTLE_MS = 500;
/** Jobs of yet other customers delivered (not measured) before the paced ones, so both cases start warm. */
const WARM_UP = 200;
const CLASSIFY_TIMEOUT_MS = 600_000;
const OTHERS_TIMEOUT_MS = 60_000;

// 'big' is blocked after 5 jobs; each other job has a customer of its own, so its bucket never fills.
const PER_CUSTOMER = Throttle.named('per-customer').key([Key.data('customer')]).limit(BIG_LIMIT, '1h');

interface CaseResult {
  latencies: number[];
  deliveriesPerSecond: number;
  classifyMs: number | null;
  held: number | null;
  bigDelivered: number;
}

async function measure(context: BenchmarkContext, withBacklog: boolean): Promise<CaseResult> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${withBacklog ? 'with' : 'without'}`, context.redis);
  try {
    const queue = rig.queue('hol');
    if (withBacklog) {
      const addStart = Date.now();
      await addBacklog(queue, BACKLOG, () => ({ customer: 'big' }), 'big');
      context.log(`  added ${BACKLOG.toLocaleString('en-US')} 'big' jobs in ${Date.now() - addStart} ms`);
    }
    let bigDelivered = 0;
    const addedAt = new Map<number, number>();
    const startedAt = new Map<number, number>();
    let warmUp = (): void => undefined;
    const processor = async (job: Job): Promise<void> => {
      const now = Date.now();
      if (job.data.warmUp) warmUp();
      else if (job.data.customer === 'big') bigDelivered++;
      else startedAt.set(job.data.n as number, now);
    };
    const workerStart = Date.now();
    const worker = rig.track(new ThrottledWorker('hol', processor, {
      connection: rig.connection, prefix: rig.prefix, concurrency: CONCURRENCY, throttles: [PER_CUSTOMER],
    }));
    await worker.waitUntilReady();
    let classifyMs: number | null = null;
    let held: number | null = null;
    if (withBacklog) {
      await waitUntil(async () => (await queue.getWaitingCount()) === 0, CLASSIFY_TIMEOUT_MS, `the ${BACKLOG} 'big' jobs to leave wait (classified)`, 100);
      classifyMs = Date.now() - workerStart;
      await waitUntil(async () => bigDelivered >= BIG_LIMIT && (await getThrottledCount(queue)).classifying === 0, 60_000,
        `${BIG_LIMIT} 'big' deliveries and an empty intake (delivered ${bigDelivered})`, 50);
      context.log(`  backlog classified in ${classifyMs} ms`);
    }
    let warmed = 0;
    warmUp = () => { warmed++; };
    await addBacklog(queue, WARM_UP, (i) => ({ customer: `w${i}`, warmUp: true }), 'warm-up', BATCH);
    await waitUntil(() => warmed >= WARM_UP, OTHERS_TIMEOUT_MS, `${WARM_UP} warm-up jobs (started ${warmed})`, 20);
    await sleep(SETTLE_MS);
    if (withBacklog) held = (await getThrottledCount(queue)).held;
    const paceStart = Date.now();
    for (let batch = 0; batch * BATCH < OTHERS; batch++) {
      const wait = paceStart + batch * PACE_MS - Date.now();
      if (wait > 0) await sleep(wait);
      const ids = Array.from({ length: Math.min(BATCH, OTHERS - batch * BATCH) }, (_, j) => batch * BATCH + j);
      const now = Date.now();
      for (const n of ids) addedAt.set(n, now);
      await queue.addBulk(ids.map((n) => ({ name: 'other', data: { customer: `o${n}`, n } })));
    }
    await waitUntil(() => startedAt.size >= OTHERS || rig.errors.length > 0, OTHERS_TIMEOUT_MS,
      `${OTHERS} other customers' jobs to start`, 20)
      .catch((error: Error) => { throw new Error(`${error.message} (started ${startedAt.size}, backlog ${withBacklog})`); });
    rig.assertNoErrors(`headOfLine ${withBacklog ? 'with' : 'without'} backlog`);
    if (bigDelivered > BIG_LIMIT) {
      throw new Error(`customer 'big' got ${bigDelivered} deliveries under a limit of ${BIG_LIMIT} per 1 h`);
    }
    const starts = [...startedAt.values()];
    const latencies = [...startedAt.entries()].map(([n, start]) => start - addedAt.get(n)!);
    const spanMs = Math.max(...starts) - Math.min(...starts);
    return { latencies, deliveriesPerSecond: spanMs > 0 ? (OTHERS * 1000) / spanMs : NaN, classifyMs, held, bigDelivered };
  } finally {
    await rig.close();
  }
}

function row(label: string, result: CaseResult): Row {
  return {
    case: label,
    p50Ms: percentile(result.latencies, 50),
    p99Ms: percentile(result.latencies, 99),
    maxMs: Math.max(...result.latencies),
    deliveriesPerSecond: Math.round(result.deliveriesPerSecond),
    bigDelivered: result.bigDelivered,
    held: result.held,
    classifyMs: result.classifyMs,
    p99Ratio: null,
  };
}

export const headOfLine: Benchmark = {
  name: 'headOfLine',
  description: 'add→start latency of an unblocked bucket\'s jobs, with and without 100,000 jobs held on a blocked bucket',
  async run(context) {
    const load = loadNote();
    const without = row('no backlog', await measure(context, false));
    const withBacklog = row(`${BACKLOG.toLocaleString('en-US')} held for 'big'`, await measure(context, true));
    const ratio = round(Number(withBacklog.p99Ms) / Math.max(1, Number(without.p99Ms)), 2);
    withBacklog.p99Ratio = ratio;
    return {
      title: `Head-of-line: latency of unblocked jobs past ${BACKLOG.toLocaleString('en-US')} held ones (ThrottledWorker, concurrency ${CONCURRENCY})`,
      columns: [
        { key: 'case', label: 'case' },
        { key: 'p50Ms', label: 'p50 ms' },
        { key: 'p99Ms', label: 'p99 ms' },
        { key: 'maxMs', label: 'max ms' },
        { key: 'deliveriesPerSecond', label: 'deliveries/s' },
        { key: 'bigDelivered', label: "'big' delivered" },
        { key: 'held', label: 'held' },
        { key: 'classifyMs', label: 'classify backlog ms' },
        { key: 'p99Ratio', label: 'p99 with / without', digits: 2 },
      ],
      rows: [without, withBacklog],
      notes: [
        `p99(with) / p99(without) = ${ratio} (p99 without taken as at least 1 ms).`,
        `Throttle 'per-customer' keyed on data.customer, ${BIG_LIMIT} per 1 h: 'big' is blocked after ${BIG_LIMIT} deliveries.`,
        `With backlog: ${BACKLOG.toLocaleString('en-US')} 'big' jobs added (addBulk, 1,000 per call) before the worker starts; "classify backlog"`,
        '  is from constructing the worker until queue.getWaitingCount() is 0 (every job taken from wait and held); then the',
        `  run waits for ${BIG_LIMIT} 'big' deliveries and an empty intake. "held": getThrottledCount().held just before the paced adds.`,
        `Both cases first deliver ${WARM_UP} warm-up jobs of distinct customers (not measured), then wait ${SETTLE_MS} ms.`,
        `Both cases then add ${OTHERS.toLocaleString('en-US')} jobs of ${OTHERS.toLocaleString('en-US')} distinct customers (never binding), ${BATCH} per addBulk every ${PACE_MS} ms`,
        `  (${(BATCH * 1000) / PACE_MS} jobs/s offered). Latency: Date.now() at the processor's start minus Date.now() just before the job's addBulk,`,
        '  both in this process. deliveries/s: those jobs over first to last processor start.',
        `Fixed sizes (BENCH_DURATION_MS is not used); one run per case, without first. ${load} at start.`,
      ],
    };
  },
};
