import { performance } from 'node:perf_hooks';
import { Key } from '../src/declarations/Key';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { mostInAnyWindow } from '../src/check/mostInAnyWindow';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { commandsCalled, redisCpuDelta, redisCpuSnapshot } from './support/redisCpu';
import { round } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

/**
 * Issue 30, item 1: what fair shares cost a delivery while a limit binds (jobs held, so that their places in line
 * are their groups' turns): one queue draining the same backlog under the same limit with fairness off, over 10
 * groups, and over 100,000 groups (each job a group of its own, the largest the groups' state grows).
 */
interface Case {
  readonly label: string;
  /** Groups the jobs spread over; 0: no fairness option. */
  readonly groups: number;
}

const CASES: readonly Case[] = [
  { label: 'fairness off', groups: 0 },
  { label: '10 groups', groups: 10 },
  { label: '100,000 groups (each job its own)', groups: 100_000 },
];
const JOBS = Number(process.env.BENCH_FAIRNESS_JOBS ?? 20_000);
const LIMIT = 5_000;
const WORKERS = 2;
const CONCURRENCY = 50;
const DRAIN_TIMEOUT_MS = 180_000;

interface Drain {
  jobsPerSecond: number;
  redisCpuUsPerJob: number;
  commandsPerJob: number;
  mostInWindow: number;
}

async function drain(context: BenchmarkContext, testCase: Case, index: number): Promise<Drain> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-fair-${index}`, context.redis);
  try {
    // Tenants interleaved as a busy queue gets them; with 100,000 groups each job is one of its own.
    await addBacklog(rig.queue('fair'), JOBS, (i) => ({ tenant: `t${testCase.groups > 0 ? (i * 7919) % testCase.groups : 0}` }));
    const starts: number[] = [];
    let completed = 0;
    let last = 0;
    const processor = async (): Promise<void> => { starts.push(performance.timeOrigin + performance.now()); };
    const before = await redisCpuSnapshot(context.redis);
    for (let w = 0; w < WORKERS; w++) {
      const worker = rig.track(new ThrottledWorker('fair', processor, {
        connection: rig.connection, prefix: rig.prefix, concurrency: CONCURRENCY,
        throttles: [Throttle.named('shared').limit(LIMIT, '1s')],
        ...(testCase.groups > 0 ? { fairness: { key: Key.data('tenant') } } : {}),
      }));
      worker.on('completed', () => { if (++completed === JOBS) last = performance.timeOrigin + performance.now(); });
    }
    await waitUntil(() => completed >= JOBS || rig.errors.length > 0, DRAIN_TIMEOUT_MS, `${testCase.label} to complete ${JOBS} jobs (so far ${completed})`, 50);
    const redis = redisCpuDelta(before, await redisCpuSnapshot(context.redis));
    rig.assertNoErrors(testCase.label);
    return {
      jobsPerSecond: (JOBS * 1000) / (last - Math.min(...starts)),
      redisCpuUsPerJob: redis.serverCpuUsec / JOBS,
      commandsPerJob: commandsCalled(redis) / JOBS,
      mostInWindow: mostInAnyWindow(starts, 1_000),
    };
  } finally {
    await rig.close();
  }
}

export const fairness: Benchmark = {
  name: 'fairness',
  description: 'Delivery throughput and Redis CPU per job with fair shares on (10 and 100,000 groups) against off, under a binding limit',
  async run(context) {
    const load = loadNote();
    const rows: Row[] = [];
    let off: Drain | undefined;
    let index = 0;
    for (const testCase of CASES) {
      const result = await drain(context, testCase, index++);
      off ??= result;
      context.log(`  ${testCase.label}: ${Math.round(result.jobsPerSecond)} jobs/s, Redis CPU ${result.redisCpuUsPerJob.toFixed(1)} µs/job, ${result.commandsPerJob.toFixed(1)} commands/job`);
      rows.push({
        case: testCase.label,
        jobsPerSecond: Math.round(result.jobsPerSecond),
        mostInWindow: result.mostInWindow,
        redisCpuUsPerJob: round(result.redisCpuUsPerJob, 1),
        commandsPerJob: round(result.commandsPerJob, 1),
        cpuVsOff: round(result.redisCpuUsPerJob / off.redisCpuUsPerJob, 2),
      });
    }
    return {
      title: `Fair shares under a binding limit(${LIMIT.toLocaleString('en-US')}, '1s'): ${JOBS.toLocaleString('en-US')} jobs, one queue`,
      columns: [
        { key: 'case', label: 'case' },
        { key: 'jobsPerSecond', label: 'jobs/s' },
        { key: 'mostInWindow', label: 'most starts in 1 s' },
        { key: 'redisCpuUsPerJob', label: 'Redis CPU µs/job', digits: 1 },
        { key: 'commandsPerJob', label: 'Redis commands/job', digits: 1 },
        { key: 'cpuVsOff', label: 'Redis CPU vs off', digits: 2 },
      ],
      rows,
      notes: [
        `Each case: ${JOBS.toLocaleString('en-US')} jobs added first, then ${WORKERS} ThrottledWorkers of concurrency ${CONCURRENCY} in this process drain them under`,
        `  limit(${LIMIT.toLocaleString('en-US')}, '1s'), held jobs taking their places in line (their groups' turns with fairness on); one run each, in one sitting.`,
        '  BENCH_FAIRNESS_JOBS sets the number of jobs.',
        `${load} at start.`,
      ],
    };
  },
};
