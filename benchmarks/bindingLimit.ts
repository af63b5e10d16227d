import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { mostInAnyWindow } from '../src/check/mostInAnyWindow';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { commandsCalled, redisCpuDelta, redisCpuSnapshot } from './support/redisCpu';
import { round } from './support/summary';
import { describeScriptTimes, readScriptTimes, ScriptTime, slowlogWanted, startScriptTimes } from './support/scriptTimes';
import type { Benchmark, BenchmarkContext, Row } from './types';

/**
 * Issue 29, item 2: what Redis spends per delivered job while a shared limit binds, against plain bullmq draining
 * the same jobs without one, and whether it grows with the worker slots that wait for room.
 */
interface Case {
  readonly label: string;
  readonly queues: number;
  readonly workersPerQueue: number;
  readonly concurrency: number;
  readonly max: number;
  readonly jobsPerQueue: number;
}

const CASES: readonly Case[] = [
  { label: '10 queues share 2,000/s', queues: 10, workersPerQueue: 2, concurrency: 50, max: 2_000, jobsPerQueue: 1_200 },
  { label: '10 queues share 2,000/s, 4x the slots', queues: 10, workersPerQueue: 2, concurrency: 200, max: 2_000, jobsPerQueue: 1_200 },
  { label: '1 queue, 20,000/s', queues: 1, workersPerQueue: 2, concurrency: 100, max: 20_000, jobsPerQueue: 60_000 },
];
const TARGET_RATIO = 1.5;
const DRAIN_TIMEOUT_MS = 180_000;

type Kind = 'plain' | 'throttled';

interface Drain {
  jobs: number;
  jobsPerSecond: number;
  redisCpuUsPerJob: number;
  evalshaCallsPerJob: number;
  commandsPerJob: number;
  mostInWindow: number;
  topCommands: string;
  /** INFO commandstats evalsha usec a job: time inside scripts (bullmq's and ours, their commands included). */
  scriptUsPerJob: number;
  /** Deliveries put back for a processor that would have started late, a job. */
  putBackPerJob: number;
  /** With BENCH_SLOWLOG=1: Redis time per script (support/scriptTimes). */
  scriptTimes: ScriptTime[];
}

/** SLOWLOG reconfigures the server and slows it: only on the benchmark's own redis-server. */
const SLOWLOG = slowlogWanted() && !process.env.REDIS_URL;

async function drain(context: BenchmarkContext, testCase: Case, kind: Kind, index: number): Promise<Drain> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${kind}-${index}`, context.redis);
  try {
    const names = Array.from({ length: testCase.queues }, (_, q) => `bind${q}`);
    for (const name of names) await addBacklog(rig.queue(name), testCase.jobsPerQueue, (i) => ({ i }));
    const total = testCase.queues * testCase.jobsPerQueue;
    const starts: number[] = [];
    let completed = 0;
    let last = 0;
    const processor = async (): Promise<void> => { starts.push(performance.timeOrigin + performance.now()); };
    const throttles = [Throttle.named('shared').limit(testCase.max, '1s')];
    const throttledWorkers: ThrottledWorker[] = [];
    if (SLOWLOG) await startScriptTimes(context.redis);
    const before = await redisCpuSnapshot(context.redis);
    for (const name of names) {
      for (let w = 0; w < testCase.workersPerQueue; w++) {
        const options = { connection: rig.connection, prefix: rig.prefix, concurrency: testCase.concurrency };
        const worker = rig.track<Worker>(kind === 'plain' ? new Worker(name, processor, options) : new ThrottledWorker(name, processor, { ...options, throttles }));
        if (worker instanceof ThrottledWorker) throttledWorkers.push(worker);
        (worker as Worker).on('completed', () => { if (++completed === total) last = performance.timeOrigin + performance.now(); });
      }
    }
    const putBack = () => throttledWorkers.reduce((sum, w) => sum + w.startDeadline.putBack, 0);
    const hs = () => throttledWorkers.map((w) => w.startDeadline.hMs).join(',');
    const progress = setInterval(() => context.log(`    ${kind}: ${completed} completed, ${putBack()} put back, h ${hs()}`), 5_000);
    await waitUntil(() => completed >= total || rig.errors.length > 0, DRAIN_TIMEOUT_MS, `${kind} ${testCase.label} to complete ${total} jobs (so far ${completed})`, 50)
      .finally(() => clearInterval(progress));
    const redis = redisCpuDelta(before, await redisCpuSnapshot(context.redis));
    const scriptTimes = SLOWLOG ? await readScriptTimes(context.redis) : [];
    rig.assertNoErrors(`${kind} ${testCase.label}`);
    return {
      jobs: total,
      jobsPerSecond: (total * 1000) / (last - Math.min(...starts)),
      redisCpuUsPerJob: redis.serverCpuUsec / total,
      evalshaCallsPerJob: redis.evalshaCalls / total,
      commandsPerJob: commandsCalled(redis) / total,
      mostInWindow: mostInAnyWindow(starts, 1_000),
      scriptUsPerJob: redis.evalshaUsec / total,
      putBackPerJob: putBack() / total,
      scriptTimes,
      topCommands: Object.entries(redis.calls).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, calls]) => `${name} ${(calls / total).toFixed(2)}`).join(', '),
    };
  } finally {
    await rig.close();
  }
}

export const bindingLimit: Benchmark = {
  name: 'bindingLimit',
  description: 'Redis CPU and commands per delivered job while a shared limit binds, against plain bullmq draining the same jobs unthrottled',
  async run(context) {
    const load = loadNote();
    const rows: Row[] = [];
    let index = 0;
    for (const testCase of CASES) {
      const plain = await drain(context, testCase, 'plain', index++);
      const throttled = await drain(context, testCase, 'throttled', index++);
      for (const [kind, result] of [['plain', plain], ['throttled', throttled]] as const) {
        context.log(`  ${testCase.label}, ${kind}: ${Math.round(result.jobsPerSecond)} jobs/s, Redis CPU ${result.redisCpuUsPerJob.toFixed(1)} µs/job (in scripts ${result.scriptUsPerJob.toFixed(1)}), put back ${result.putBackPerJob.toFixed(3)}; per job: ${result.topCommands}`);
        for (const line of describeScriptTimes(result.scriptTimes, result.jobs)) context.log(`    ${line}`);
      }
      const ratio = round(throttled.redisCpuUsPerJob / plain.redisCpuUsPerJob, 2);
      const describe = (kind: Kind, result: Drain): Row => ({
        case: testCase.label,
        slots: testCase.queues * testCase.workersPerQueue * testCase.concurrency,
        kind: kind === 'plain' ? 'bullmq Worker, no limit' : `ThrottledWorker, limit(${testCase.max.toLocaleString('en-US')}, '1s')`,
        jobsPerSecond: Math.round(result.jobsPerSecond),
        mostInWindow: result.mostInWindow,
        redisCpuUsPerJob: round(result.redisCpuUsPerJob, 1),
        evalshaCallsPerJob: round(result.evalshaCallsPerJob, 2),
        commandsPerJob: round(result.commandsPerJob, 1),
        ratio: kind === 'plain' ? null : ratio,
        pass: kind === 'plain' ? null : ratio <= TARGET_RATIO,
      });
      rows.push(describe('plain', plain), describe('throttled', throttled));
    }
    return {
      title: `Binding limit: Redis work per delivered job (target ≤ ${TARGET_RATIO}× plain bullmq's)`,
      columns: [
        { key: 'case', label: 'case' },
        { key: 'slots', label: 'worker slots' },
        { key: 'kind', label: 'worker' },
        { key: 'jobsPerSecond', label: 'jobs/s' },
        { key: 'mostInWindow', label: 'most starts in 1 s' },
        { key: 'redisCpuUsPerJob', label: 'Redis CPU µs/job', digits: 1 },
        { key: 'evalshaCallsPerJob', label: 'EVALSHA calls/job', digits: 2 },
        { key: 'commandsPerJob', label: 'Redis commands/job', digits: 1 },
        { key: 'ratio', label: 'Redis CPU vs plain', digits: 2 },
        { key: 'pass', label: `≤ ${TARGET_RATIO}` },
      ],
      rows,
      notes: [
        'Each case: the backlog is added first (1,000 per addBulk), then every worker starts in this process; measured from worker start to the last',
        '  completion. Plain bullmq drains the same jobs with no limit (it has no limit shared across queues), so its figures are the cost of a job',
        '  as bullmq pays it; the throttled run is held to the shared limit, its slots waiting for room most of the time.',
        'Redis CPU = INFO cpu used_cpu_user+sys of the bench Redis; commands = every command executed, those inside scripts included.',
        ...(SLOWLOG ? ['BENCH_SLOWLOG=1: every command logged in SLOWLOG (Redis some 20 % slower); the log lines give Redis time per script.'] : []),
        `${load} at start.`,
      ],
    };
  },
};
