import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import { Key } from '../src/declarations/Key';
import { Missing } from '../src/declarations/Missing';
import { Throttle } from '../src/declarations/Throttle';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { loadNote } from './support/loadNote';
import { commandsCalled, redisCpuDelta, redisCpuSnapshot } from './support/redisCpu';
import { describeScriptTimes, readScriptTimes, ScriptTime, slowlogWanted, startScriptTimes } from './support/scriptTimes';
import { round, summarize } from './support/summary';
import type { Benchmark, BenchmarkContext, Row } from './types';

const JOBS = 20_000;
/** Customers the jobs' data names (the keyed throttle's buckets); redisInstructions drains the same jobs. */
export const CUSTOMERS = 1000;
const CONCURRENCY = 50;
// For comparison only (the target is at CONCURRENCY): with more slots, a ThrottledWorker's batches are larger.
const MORE_CONCURRENCY = 100;
// Runs of one kind differ by up to a third on a shared machine (another tenant's load comes and goes): the
// median of five alternating runs moves less from one bench run to the next than that of three.
const RUNS = 5;
const TARGET_RATIO = 0.75;
const DRAIN_TIMEOUT_MS = 180_000;

/** Limits that never bind: 20,000 jobs stay far below 10,000,000/1s overall and 1,000,000/1s per customer. */
export const NEVER_BINDING_THROTTLES = [
  Throttle.named('all').limit(10_000_000, '1s'),
  Throttle.named('per-customer').key([Key.data('customer')]).limit(1_000_000, '1s'),
];

/**
 * Issue 29's case of jobs no throttle applies to: the queue's one throttle keys on an attribute none of these jobs
 * has, with the missing-key policy Unthrottled.
 */
const UNTOUCHED_THROTTLES = [
  Throttle.named('per-tenant').key([Key.data('tenant')]).whenKeyMissing(Missing.Unthrottled).limit(10, '1s'),
];

type Kind = 'plain' | 'throttled' | 'untouched';

const KIND_LABELS: Record<Kind, string> = {
  plain: 'bullmq Worker',
  throttled: 'ThrottledWorker (2 throttles, never binding)',
  untouched: 'ThrottledWorker (no throttle applies: key missing, Unthrottled)',
};

/** SLOWLOG reconfigures the server and slows it: only on the benchmark's own redis-server. */
const SLOWLOG = slowlogWanted() && !process.env.REDIS_URL;

interface Drain {
  jobsPerSecond: number;
  nodeCpuUsPerJob: number;
  evalshaUsPerJob: number;
  evalshaCallsPerJob: number;
  redisCpuUsPerJob: number;
  commandsPerJob: number;
  /** The commands called most per job, for the log. */
  topCommands: string;
  /** With BENCH_SLOWLOG=1: Redis time per script (support/scriptTimes). */
  scriptTimes: ScriptTime[];
}

/** Adds the backlog, then starts one worker of `kind` and times it from the first job processed to the last completed. */
async function drain(context: BenchmarkContext, kind: Kind, run: number, concurrency: number): Promise<Drain> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-${kind}-${concurrency}-${run}`, context.redis);
  try {
    const queue = rig.queue('throughput');
    await addBacklog(queue, JOBS, (i) => ({ customer: `c${i % CUSTOMERS}` }));
    const seen = new Set<string>();
    let duplicates = 0;
    let first = 0;
    let last = 0;
    let completed = 0;
    let failed = 0;
    const processor = async (job: { id?: string }): Promise<void> => {
      if (first === 0) first = performance.now();
      if (seen.has(job.id!)) duplicates++;
      seen.add(job.id!);
    };
    if (SLOWLOG) await startScriptTimes(context.redis);
    const redisBefore = await redisCpuSnapshot(context.redis);
    const cpuBefore = process.cpuUsage();
    const options = { connection: rig.connection, prefix: rig.prefix, concurrency };
    const worker: Worker = rig.track(kind === 'plain'
      ? new Worker('throughput', processor, options)
      : new ThrottledWorker('throughput', processor, { ...options, throttles: kind === 'throttled' ? NEVER_BINDING_THROTTLES : UNTOUCHED_THROTTLES, ...(process.env.BENCH_LEASE_MS ? { leaseMs: Number(process.env.BENCH_LEASE_MS) } : {}) }));
    worker.on('completed', () => { if (++completed === JOBS) last = performance.now(); });
    worker.on('failed', () => { failed++; });
    await waitUntil(() => completed >= JOBS || failed > 0 || rig.errors.length > 0, DRAIN_TIMEOUT_MS,
      `${kind} run ${run} to complete ${JOBS} jobs (completed so far: ${completed})`, 50)
      .catch((error: Error) => { throw new Error(`${error.message}; completed ${completed}, failed ${failed}`); });
    const cpu = process.cpuUsage(cpuBefore);
    const redis = redisCpuDelta(redisBefore, await redisCpuSnapshot(context.redis));
    const scriptTimes = SLOWLOG ? await readScriptTimes(context.redis) : [];
    rig.assertNoErrors(`${kind} run ${run}`);
    if (failed > 0) throw new Error(`${kind} run ${run}: ${failed} job(s) failed with a processor that cannot fail`);
    if (duplicates > 0 || seen.size !== JOBS) throw new Error(`${kind} run ${run}: ${seen.size} distinct jobs processed, ${duplicates} processed twice (expected ${JOBS}, 0)`);
    return {
      jobsPerSecond: (JOBS * 1000) / (last - first),
      nodeCpuUsPerJob: (cpu.user + cpu.system) / JOBS,
      evalshaUsPerJob: redis.evalshaUsec / JOBS,
      evalshaCallsPerJob: redis.evalshaCalls / JOBS,
      redisCpuUsPerJob: redis.serverCpuUsec / JOBS,
      commandsPerJob: commandsCalled(redis) / JOBS,
      topCommands: Object.entries(redis.calls).sort((a, b) => b[1] - a[1]).slice(0, 10)
        .map(([name, calls]) => `${name} ${(calls / JOBS).toFixed(2)}`).join(', '),
      scriptTimes,
    };
  } finally {
    await rig.close();
  }
}

function row(kind: Kind, concurrency: number, drains: readonly Drain[]): Row {
  const rate = summarize(drains.map((d) => d.jobsPerSecond));
  const median = (pick: (d: Drain) => number, digits: number) => round(summarize(drains.map(pick)).median, digits);
  return {
    kind: KIND_LABELS[kind],
    concurrency,
    runs: drains.map((d) => Math.round(d.jobsPerSecond).toLocaleString('en-US')).join(' / '),
    min: Math.round(rate.min),
    median: Math.round(rate.median),
    max: Math.round(rate.max),
    nodeCpuUsPerJob: median((d) => d.nodeCpuUsPerJob, 1),
    evalshaUsPerJob: median((d) => d.evalshaUsPerJob, 1),
    evalshaCallsPerJob: median((d) => d.evalshaCallsPerJob, 2),
    redisCpuUsPerJob: median((d) => d.redisCpuUsPerJob, 1),
    commandsPerJob: median((d) => d.commandsPerJob, 1),
    ratio: null,
    pass: null,
  };
}

export const workerThroughput: Benchmark = {
  name: 'workerThroughput',
  description: 'jobs/s of ThrottledWorker with throttles that never bind, against a plain bullmq Worker draining the same backlog',
  async run(context) {
    const load = loadNote();
    const rows: Row[] = [];
    let ratio = 0;
    let moreRatio = 0;
    let untouchedRatio = 0;
    for (const concurrency of [CONCURRENCY, MORE_CONCURRENCY]) {
      const drains: Record<Kind, Drain[]> = { plain: [], throttled: [], untouched: [] };
      // Jobs no throttle applies to are measured at the target's concurrency only.
      const kinds: Kind[] = concurrency === CONCURRENCY ? ['plain', 'throttled', 'untouched'] : ['plain', 'throttled'];
      for (let run = 1; run <= RUNS; run++) {
        for (const kind of kinds) {
          const result = await drain(context, kind, run, concurrency);
          context.log(`  ${kind} (concurrency ${concurrency}) run ${run}: ${Math.round(result.jobsPerSecond)} jobs/s; per job: ${result.topCommands}`);
          for (const line of describeScriptTimes(result.scriptTimes, JOBS)) context.log(`    ${line}`);
          drains[kind].push(result);
        }
      }
      const plain = row('plain', concurrency, drains.plain);
      const throttled = row('throttled', concurrency, drains.throttled);
      const medianRatio = round(Number(throttled.median) / Number(plain.median), 3);
      throttled.ratio = medianRatio;
      if (concurrency === CONCURRENCY) {
        ratio = medianRatio;
        throttled.pass = medianRatio >= TARGET_RATIO;
      } else {
        moreRatio = medianRatio;
      }
      rows.push(plain, throttled);
      if (drains.untouched.length > 0) {
        const untouched = row('untouched', concurrency, drains.untouched);
        untouched.ratio = round(Number(untouched.median) / Number(plain.median), 3);
        untouchedRatio = untouched.ratio;
        rows.push(untouched);
      }
    }
    return {
      title: `Worker throughput: ThrottledWorker vs bullmq Worker (${JOBS.toLocaleString('en-US')} jobs; target at concurrency ${CONCURRENCY})`,
      columns: [
        { key: 'kind', label: 'worker' },
        { key: 'concurrency', label: 'concurrency' },
        { key: 'runs', label: 'jobs/s per run' },
        { key: 'min', label: 'min jobs/s' },
        { key: 'median', label: 'median jobs/s' },
        { key: 'max', label: 'max jobs/s' },
        { key: 'nodeCpuUsPerJob', label: 'node CPU µs/job', digits: 1 },
        { key: 'evalshaUsPerJob', label: 'Redis EVALSHA µs/job', digits: 1 },
        { key: 'evalshaCallsPerJob', label: 'EVALSHA calls/job', digits: 2 },
        { key: 'redisCpuUsPerJob', label: 'Redis CPU µs/job', digits: 1 },
        { key: 'commandsPerJob', label: 'Redis commands/job', digits: 1 },
        { key: 'ratio', label: 'ratio of medians', digits: 3 },
        { key: 'pass', label: `≥ ${TARGET_RATIO}` },
      ],
      rows,
      notes: [
        `Ratio of medians throttled/plain at concurrency ${CONCURRENCY}: ${ratio} (target ≥ ${TARGET_RATIO}): ${ratio >= TARGET_RATIO ? 'pass' : 'FAIL'}.`,
        `Jobs no throttle applies to (one throttle keyed on data.tenant, which no job has, whenKeyMissing(Unthrottled)), at concurrency ${CONCURRENCY}: ${untouchedRatio}.`,
        `At concurrency ${MORE_CONCURRENCY}, for comparison (no target): ${moreRatio}. More slots make larger delivery and completion batches,`,
        '  so each call\'s fixed cost is shared by more jobs, and more batches are under way at once for Node and Redis to overlap.',
        `Each run: ${JOBS.toLocaleString('en-US')} jobs over ${CUSTOMERS.toLocaleString('en-US')} customers added with addBulk (1,000 per call) before the worker starts,`,
        '  on a queue and prefix of its own; trivial async processor; jobs/s from the first processor call to the last "completed" event.',
        `Plain and throttled alternate, ${RUNS} runs each per concurrency (plain, throttled, untouched, plain, ...); fixed sizes, BENCH_DURATION_MS is not used.`,
        "Throttles: 'all' 10,000,000/1s (unkeyed) and 'per-customer' 1,000,000/1s keyed on data.customer: neither ever refuses.",
        `leaseMs: ${process.env.BENCH_LEASE_MS ?? "the worker's default ('auto': the start deadline)"} (BENCH_LEASE_MS sets it, e.g. 0 to compare without the deadline).`,
        'CPU per job is the median over runs, from worker start to the last completion (start-up and classification included):',
        '  node = process.cpuUsage() of this process (the worker; the backlog is added before), Redis = INFO cpu used_cpu_user+sys;',
        '  EVALSHA = INFO commandstats cmdstat_evalsha usec (every Lua script, bullmq\'s and ours, commands inside included) and calls.',
        '  Redis commands/job: every command Redis executed, those inside scripts included (the scripts, INFO, SCAN, DEL left out).',
        '  Counters are read as differences of snapshots (no CONFIG RESETSTAT); on a shared REDIS_URL they include other clients.',
        ...(SLOWLOG ? ['BENCH_SLOWLOG=1: every command logged in SLOWLOG (Redis some 20 % slower); the log lines give Redis time per script.'] : []),
        'Node and Redis share the machine\'s cores, so the ratio is set by whichever side saturates first.',
        `${load} at start.`,
      ],
    };
  },
};
