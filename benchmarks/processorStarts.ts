import { Job } from 'bullmq';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { mostInAnyWindow } from '../src/check/mostInAnyWindow';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const CONCURRENCY = 50;
const WORKERS = 2;
/** Periods: how many times N starts are timed (one for a minute's window, so that the row takes a minute, not five). */
const LIMITS = [
  { max: 100, windowMs: 100, periods: 10, label: '100 per 100 ms' },
  { max: 200, windowMs: 1_000, periods: 5, label: '200 per 1 s' },
  { max: 600, windowMs: 60_000, periods: 1, label: '600 per 1 min' },
];
type Limit = (typeof LIMITS)[number];

const nowMs = () => performance.timeOrigin + performance.now();

/** Two workers with default options drain a backlog under limit; resolves to the processor starts and the workers' deadlines. */
async function run(context: BenchmarkContext, limit: Limit) {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${limit.max}per${limit.windowMs}`, context.redis);
  try {
    const queue = rig.queue('starts');
    const needed = limit.max * limit.periods + 1;
    await addBacklog(queue, needed + limit.max, (i) => ({ i }));
    const starts: number[] = [];
    const processedOn: number[] = [];
    const processor = async (job: Job): Promise<void> => {
      starts.push(nowMs());
      processedOn.push(job.processedOn!);
    };
    const throttles = [Throttle.named('api').limit(limit.max, limit.windowMs)];
    const workers = Array.from({ length: WORKERS }, () => rig.track(new ThrottledWorker('starts', processor, {
      connection: rig.connection, prefix: rig.prefix, concurrency: CONCURRENCY, leaseMs: 'auto', throttles,
    })));
    await waitUntil(() => starts.length >= needed || rig.errors.length > 0, 3 * limit.periods * limit.windowMs + 60_000, `${limit.label}: ${needed} starts`, 10);
    rig.assertNoErrors(limit.label);
    const deadlines = workers.map((worker) => worker.startDeadline);
    return { starts: starts.slice(0, needed), processedOn: processedOn.slice(0, needed), deadlines };
  } finally {
    await rig.close();
  }
}

function row(limit: Limit, result: Awaited<ReturnType<typeof run>>): Row {
  const sorted = [...result.starts].sort((a, b) => a - b);
  // The time N starts take, once per period: W / that is the sustained rate as a fraction of N / W.
  const periods = Array.from({ length: limit.periods }, (_, g) => sorted[(g + 1) * limit.max] - sorted[g * limit.max]).sort((a, b) => a - b);
  const period = periods[Math.floor(periods.length / 2)];
  const started = result.deadlines.reduce((sum, d) => sum + d.started, 0);
  const putBack = result.deadlines.reduce((sum, d) => sum + d.putBack, 0);
  return {
    limit: limit.label,
    starts: sorted.length,
    mostAtStart: mostInAnyWindow(result.starts, limit.windowMs),
    mostAtProcessedOn: mostInAnyWindow(result.processedOn, limit.windowMs),
    hMs: result.deadlines.map((d) => d.hMs).join(' / '),
    periodMs: round(period, 1),
    fraction: round(limit.windowMs / period, 3),
    putBackPer1000: round((1000 * putBack) / Math.max(1, started + putBack), 2),
  };
}

export const processorStarts: Benchmark = {
  name: 'processorStarts',
  description: "the guarantee at processor start with leaseMs 'auto': most starts in any W, the sustained rate as a fraction of N/W, the h each worker chose, jobs put back late",
  async run(context) {
    const load = loadNote();
    const rows: Row[] = [];
    for (const limit of LIMITS) {
      const result = row(limit, await run(context, limit));
      context.log(`  ${limit.label}: most starts in any W ${result.mostAtStart}, ${result.fraction} of N/W, h ${result.hMs} ms, put back ${result.putBackPer1000}/1000`);
      rows.push(result);
    }
    return {
      title: "The guarantee at processor start (leaseMs 'auto': h chosen by each worker)",
      columns: [
        { key: 'limit', label: 'limit N per W' },
        { key: 'starts', label: 'starts' },
        { key: 'mostAtStart', label: 'most starts in any W' },
        { key: 'mostAtProcessedOn', label: 'most processedOn in any W' },
        { key: 'hMs', label: 'h chosen (ms)' },
        { key: 'periodMs', label: 'N starts take (ms)', digits: 1 },
        { key: 'fraction', label: 'sustained / (N/W)', digits: 3 },
        { key: 'putBackPer1000', label: 'put back late per 1,000', digits: 2 },
      ],
      rows,
      notes: [
        `Each row: ${WORKERS} ThrottledWorkers in this process, concurrency ${CONCURRENCY} each, leaseMs 'auto', a backlog added before they start, a trivial processor.`,
        'starts: the moment each processor starts (performance.timeOrigin + performance.now()); most in any W: mostInAnyWindow over them.',
        'N starts take: the median over the periods of t[(g+1)N] - t[gN] over the sorted starts (W + h once saturated); sustained / (N/W) is W over it.',
        'h chosen: each worker\'s startDeadline.hMs at the end; put back: jobs whose processor would have started more than h after their delivery.',
        `${load} at start.`,
      ],
    };
  },
};
