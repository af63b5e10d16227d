import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { findRedisServerBinary, startLocalRedisServer } from '../src/devRedis/localRedisServer';
import { ThrottledWorker } from '../src/worker/ThrottledWorker';
import { addBacklog, BullmqRig, waitUntil } from './support/bullmqRig';
import { commandsCalled, redisCpuDelta, redisCpuSnapshot } from './support/redisCpu';
import { round } from './support/summary';
import type { Benchmark, Row } from './types';
import { CUSTOMERS, NEVER_BINDING_THROTTLES } from './workerThroughput';

const run = promisify(execFile);

// Redis under callgrind runs some 50 times slower: a few thousand jobs give stable counts in a minute.
const JOBS = Number(process.env.BENCH_CALLGRIND_JOBS ?? 2000);
// Jobs before the count starts and after it ends (the worker's start-up, its last batches).
const WARMUP_JOBS = 300;
const CONCURRENCY = 50;
const DRAIN_TIMEOUT_MS = 600_000;
// Under callgrind a call takes some 50 times longer: with the default h (auto in exact delivery, 100 ms leased) many
// deliveries miss their start deadline or lease, and what their returns cost swamps what a delivery costs. A lease
// no call outlasts there shows a delivery's own cost; the auto case shows what late starts add.
const SLOW_LEASE_MS = 1000;
// workerThroughput's throttles and jobs: neither throttle ever refuses, so every case delivers the same jobs the same way.
const THROTTLES = NEVER_BINDING_THROTTLES;

export interface InstructionCase {
  readonly name: string;
  worker(url: string, prefix: string, processor: () => Promise<void>): Worker;
}

const cases: readonly InstructionCase[] = [
  { name: 'bullmq Worker', worker: (url, prefix, processor) => new Worker('instr', processor, options(url, prefix)) },
  {
    name: 'ThrottledWorker, exact (start deadline: leaseMs auto)',
    worker: (url, prefix, processor) => new ThrottledWorker('instr', processor, { ...options(url, prefix), throttles: THROTTLES }),
  },
  {
    name: 'ThrottledWorker, exact, leaseMs 0 (no start deadline)',
    worker: (url, prefix, processor) => new ThrottledWorker('instr', processor, { ...options(url, prefix), throttles: THROTTLES, leaseMs: 0 }),
  },
  {
    name: 'ThrottledWorker, exact, leaseMs 1000 (a start deadline no start misses)',
    worker: (url, prefix, processor) => new ThrottledWorker('instr', processor, { ...options(url, prefix), throttles: THROTTLES, leaseMs: SLOW_LEASE_MS }),
  },
  {
    name: 'ThrottledWorker, leased, leaseMs 1000 (grantor: the same server)',
    worker: (url, prefix, processor) => new ThrottledWorker('instr', processor, {
      ...options(url, prefix), throttles: THROTTLES, grantor: { connection: url }, leaseMs: SLOW_LEASE_MS,
    }),
  },
];

function options(url: string, prefix: string) {
  const port = Number(new URL(url).port);
  return { connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null }, prefix, concurrency: CONCURRENCY };
}

async function valgrindFound(): Promise<boolean> {
  try {
    await run('valgrind', ['--version']);
    return true;
  } catch {
    return false;
  }
}

/** Instructions Redis executed while instrumentation was on, from the newest dump in `dir`. */
function lastDumpTotal(dir: string): number {
  const dumps = readdirSync(dir).filter((name) => /^callgrind\.out\.\d+$/.test(name))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
  const text = readFileSync(join(dir, dumps[dumps.length - 1]), 'utf8');
  const totals = /^totals:\s+(\d+)/m.exec(text) ?? /^summary:\s+(\d+)/m.exec(text);
  if (!totals) throw new Error(`no totals line in callgrind dump ${dumps[dumps.length - 1]}`);
  return Number(totals[1]);
}

export const redisInstructions: Benchmark = {
  name: 'redisInstructions',
  description: 'instructions Redis executes per job (valgrind callgrind), plain bullmq against each delivery mode, throttles never binding',
  async run(context) {
    const columns = [
      { key: 'kind', label: 'worker' },
      { key: 'instructionsPerJob', label: 'Redis instructions/job (k)', digits: 1 },
      { key: 'ratio', label: 'against bullmq', digits: 3 },
      { key: 'scriptCallsPerJob', label: 'script calls/job', digits: 2 },
      { key: 'commandsPerJob', label: 'Redis commands/job', digits: 1 },
    ];
    const title = `Redis instructions per job (callgrind; ${JOBS.toLocaleString('en-US')} jobs, concurrency ${CONCURRENCY})`;
    const binary = findRedisServerBinary();
    if (!binary || !(await valgrindFound())) {
      return { title, columns, rows: [], notes: ['valgrind or redis-server not found: skipped (Debian: apt-get install valgrind).'] };
    }
    const dir = mkdtempSync(join(tmpdir(), 'bullmq-throttle-callgrind-'));
    const server = await startLocalRedisServer({
      binary,
      wrapper: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(dir, 'callgrind.out')}`],
      startTimeoutMs: 60_000,
    });
    const control = (...args: string[]) => run('callgrind_control', [...args, String(server.pid)]);
    const admin = new IORedis(server.url, { maxRetriesPerRequest: null });
    const rows: Row[] = [];
    try {
      let plainPerJob = 0;
      // BENCH_CALLGRIND_CASES=leaseMs 0: only the cases whose names contain it (comparing one change, say).
      const only = process.env.BENCH_CALLGRIND_CASES;
      for (const [index, testCase] of cases.entries()) {
        if (only && !testCase.name.includes(only)) continue;
        const rig = new BullmqRig(server.url, `${context.prefix}-${index}`, admin);
        try {
          await addBacklog(rig.queue('instr'), WARMUP_JOBS + JOBS + WARMUP_JOBS, (i) => ({ customer: `c${i % CUSTOMERS}` }));
          let completed = 0;
          const worker = rig.track(testCase.worker(server.url, rig.prefix, async () => undefined));
          worker.on('completed', () => { completed++; });
          const until = (count: number) => waitUntil(() => completed >= count || rig.errors.length > 0, DRAIN_TIMEOUT_MS,
            `${testCase.name} to complete ${count} jobs`, 20);
          // Counted from the WARMUP_JOBS-th completion to WARMUP_JOBS later than JOBS: the worker's start (loading and
          // compiling scripts, registration) and its last, smaller batches are left out.
          await until(WARMUP_JOBS);
          const before = await redisCpuSnapshot(admin);
          await control('--zero');
          await control('--instr=on');
          const countedFrom = completed;
          await until(WARMUP_JOBS + JOBS);
          await control('--instr=off');
          const counted = completed - countedFrom;
          await control('--dump');
          const delta = redisCpuDelta(before, await redisCpuSnapshot(admin));
          await until(WARMUP_JOBS + JOBS + WARMUP_JOBS);
          rig.assertNoErrors(testCase.name);
          const perJob = lastDumpTotal(dir) / counted;
          if (testCase === cases[0]) plainPerJob = perJob;
          context.log(`  ${testCase.name}: ${Math.round(perJob)} instructions/job`);
          rows.push({
            kind: testCase.name,
            instructionsPerJob: round(perJob / 1000, 1),
            ratio: plainPerJob > 0 ? round(perJob / plainPerJob, 3) : null,
            scriptCallsPerJob: round(((delta.calls.evalsha ?? 0) + (delta.calls.eval ?? 0)) / counted, 2),
            commandsPerJob: round(commandsCalled(delta) / counted, 1),
          });
        } finally {
          await rig.close();
        }
      }
    } finally {
      admin.disconnect();
      await server.stop();
      // BENCH_CALLGRIND_KEEP=1 keeps the dumps (one per case, in order) for callgrind_annotate.
      if (process.env.BENCH_CALLGRIND_KEEP) context.log(`  callgrind dumps kept in ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    }
    return {
      title,
      columns,
      rows,
      notes: [
        `Each case drains ${(JOBS + 2 * WARMUP_JOBS).toLocaleString('en-US')} jobs over ${CUSTOMERS.toLocaleString('en-US')} customers (added before it starts) with one worker`,
        '  on a redis-server of this benchmark\'s own run under valgrind --tool=callgrind; instructions are counted from its',
        `  ${WARMUP_JOBS}th completion for ${JOBS.toLocaleString('en-US')} more (its start-up, compiling the scripts, and its last batches left out),`,
        '  and divided by the completions seen while counting.',
        'Throttles: \'all\' 10,000,000/1s and \'per-customer\' 1,000,000/1s keyed on data.customer: neither ever refuses.',
        'Counts are exact and do not depend on the machine\'s load; how calls group (jobs a delivery call serves) does,',
        '  since Redis under callgrind is slower: compare cases of one run. BENCH_CALLGRIND_JOBS sets the number of jobs,',
        '  BENCH_CALLGRIND_CASES picks the cases whose names contain it.',
        `leaseMs ${SLOW_LEASE_MS}: under callgrind a call takes some 50 times longer, and with the default h many deliveries`,
        '  miss their start deadline or lease; the auto case shows what those late starts add there.',
      ],
    };
  },
};
