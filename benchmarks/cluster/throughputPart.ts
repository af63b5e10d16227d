import { BenchCluster, describeLayout, Layout, oneSlotLayout, spreadLayout } from '../support/benchCluster';
import { ClientCalls } from '../support/clientCalls';
import { round, summarize } from '../support/summary';
import type { Row } from '../types';
import { Drain, drain, DrainKind, ThrottleSet } from './drainCase';
import { StalledError } from './progress';

export const CONCURRENCY = 50;
export const TARGET_RATIO = 0.75;

/** One kind of worker on one layout: plain bullmq, or ThrottledWorker expected to deliver in `mode`. */
interface Kind {
  key: string;
  label: string;
  worker: DrainKind;
  layout: 'spread' | 'oneSlot';
  mode?: 'exact delivery' | 'leased delivery';
  throttles: ThrottleSet;
}

const KINDS: Kind[] = [
  { key: 'plainSpread', label: 'bullmq Worker, 3 queues on 3 masters', worker: 'plain', layout: 'spread', throttles: 'unkeyed' },
  { key: 'lease', label: 'ThrottledWorker leased, 3 queues on 3 masters', worker: 'throttled', layout: 'spread', mode: 'leased delivery', throttles: 'unkeyed' },
  { key: 'plainOneSlot', label: 'bullmq Worker, 3 queues in 1 slot', worker: 'plain', layout: 'oneSlot', throttles: 'unkeyed' },
  { key: 'exact', label: 'ThrottledWorker exact, 3 queues in 1 slot', worker: 'throttled', layout: 'oneSlot', mode: 'exact delivery', throttles: 'unkeyed' },
];
/** Once each, after the timed runs: the same with a keyed throttle too (1,000 customers), for comparison. */
const KEYED_KINDS: Kind[] = [
  { key: 'leaseKeyed', label: 'ThrottledWorker leased, + keyed throttle', worker: 'throttled', layout: 'spread', mode: 'leased delivery', throttles: 'keyed' },
  { key: 'exactKeyed', label: 'ThrottledWorker exact, + keyed throttle', worker: 'throttled', layout: 'oneSlot', mode: 'exact delivery', throttles: 'keyed' },
];

export interface ThroughputOutcome {
  rows: Row[];
  leaseRatio: number;
  exactRatio: number;
  exactToSpreadRatio: number;
  /** Every leased drain's token accounting (never-binding throttle 'all'). */
  leaseTokens: NonNullable<Drain['tokens']>[];
  notes: string[];
}

function layoutFor(bench: BenchCluster, kind: Kind, tag: string): Layout {
  return kind.layout === 'spread' ? spreadLayout(bench, `bench-cl-${tag}`, 'q') : oneSlotLayout(bench, `bench-cl-${tag}`);
}

function describe(d: Drain): string {
  return `${Math.round(d.jobsPerSecond)} jobs/s; per job: node ${d.nodeCpuUsPerJob.toFixed(0)} µs (ELU ${d.eventLoopUtilization.toFixed(2)}, p99 delay ${d.eventLoopDelayP99Ms.toFixed(1)} ms), `
    + `Redis masters ${d.redisCpuUsPerJob.toFixed(0)} µs [${d.redisCpuUsPerJobByMaster.map((v) => v.toFixed(0)).join('/')}] + replicas ${d.replicaCpuUsPerJob.toFixed(0)} µs, `
    + `${d.commandsPerJob.toFixed(1)} commands, ${d.sentPerJob.toFixed(3)} sent by node, ${d.jobsPerDeliveryCall.toFixed(1)} jobs per delivery call `
    + `(${(100 * d.emptyDeliveryShare).toFixed(0)}% empty), ${d.leaseCallsPerJob.toFixed(4)} lease calls`
    + (d.limitedPerDelivery === undefined ? '' : `; limited/delivered ${d.limitedPerDelivery.toFixed(2)}`);
}

/** "zadd +3.20, hincrby +3.19, ..." : the commands per job `a` runs more (or fewer) than `b`, biggest first. */
function commandDiff(a: Drain, b: Drain, top = 16): string {
  const names = new Set([...Object.keys(a.commandsByName), ...Object.keys(b.commandsByName)]);
  return [...names].map((name) => [name, (a.commandsByName[name] ?? 0) - (b.commandsByName[name] ?? 0)] as const)
    .filter(([, d]) => Math.abs(d) >= 0.05).sort((x, y) => Math.abs(y[1]) - Math.abs(x[1])).slice(0, top)
    .map(([name, d]) => `${name} ${d > 0 ? '+' : ''}${d.toFixed(2)}`).join(', ');
}

function kindRow(kind: Kind, drains: readonly Drain[]): Row {
  const rate = summarize(drains.map((d) => d.jobsPerSecond));
  const median = (pick: (d: Drain) => number, digits: number) => round(summarize(drains.map(pick)).median, digits);
  return {
    part: '1 throughput', measure: 'jobs/s (median)', case: kind.label, value: Math.round(rate.median), unit: 'jobs/s', pass: null,
    detail: `runs ${drains.map((d) => Math.round(d.jobsPerSecond).toLocaleString('en-US')).join(' / ')}; node ${median((d) => d.nodeCpuUsPerJob, 0)} µs/job, `
      + `ELU ${median((d) => d.eventLoopUtilization, 2)}, Redis ${median((d) => d.redisCpuUsPerJob, 0)}+${median((d) => d.replicaCpuUsPerJob, 0)} µs/job, `
      + `${median((d) => d.commandsPerJob, 1)} cmds/job` + (kind.worker === 'throttled' ? `, ${median((d) => d.jobsPerDeliveryCall, 1)} jobs/delivery call, limited/delivered ${median((d) => d.limitedPerDelivery ?? NaN, 2)}` : ''),
    runs: drains.map((d) => Math.round(d.jobsPerSecond)).join(','),
    nodeCpuUsPerJob: median((d) => d.nodeCpuUsPerJob, 1),
    eventLoopUtilization: median((d) => d.eventLoopUtilization, 3),
    redisCpuUsPerJob: median((d) => d.redisCpuUsPerJob, 1),
    replicaCpuUsPerJob: median((d) => d.replicaCpuUsPerJob, 1),
    commandsPerJob: median((d) => d.commandsPerJob, 2),
    sentPerJob: median((d) => d.sentPerJob, 3),
    jobsPerDeliveryCall: median((d) => d.jobsPerDeliveryCall, 2),
    leaseCallsPerJob: median((d) => d.leaseCallsPerJob, 4),
    leaseRequestsPerJob: median((d) => d.leaseRequestsPerJob, 4),
    limitedPerDelivery: kind.worker === 'throttled' ? median((d) => d.limitedPerDelivery ?? NaN, 3) : null,
  };
}

/**
 * Part 1: the same backlog drained by plain bullmq, exact and leased ThrottledWorkers (one worker per queue,
 * same concurrency), alternating kinds run after run so that the machine's drift spreads over all of them.
 */
export async function throughputPart(bench: BenchCluster, calls: ClientCalls, perQueue: number, runs: number, log: (m: string) => void): Promise<ThroughputOutcome> {
  const drains = new Map<string, Drain[]>(KINDS.map((k) => [k.key, []]));
  const timeoutMs = 120_000;
  log(`  ${describeLayout(layoutFor(bench, KINDS[1], 'probe'), bench)}`);
  log(`  ${describeLayout(layoutFor(bench, KINDS[3], 'probe'), bench)}`);
  for (let run = 1; run <= runs; run++) {
    for (const kind of KINDS) {
      const result = await drain(bench, layoutFor(bench, kind, `${kind.key}-${run}`), kind.worker, perQueue, CONCURRENCY, kind.throttles, kind.mode, calls, timeoutMs);
      log(`  ${kind.key} run ${run}: ${describe(result)}`);
      log(`    Redis commands/job: ${result.topCommands}`);
      if (kind.worker === 'throttled') log(`    sent by node per job: ${result.topSent}`);
      drains.get(kind.key)!.push(result);
    }
  }
  log(`  commands per job, leased minus exact (last runs): ${commandDiff(drains.get('lease')!.at(-1)!, drains.get('exact')!.at(-1)!)}`);
  const rows = KINDS.map((kind) => kindRow(kind, drains.get(kind.key)!));
  const medianOf = (key: string) => summarize(drains.get(key)!.map((d) => d.jobsPerSecond)).median;
  const leaseRatio = round(medianOf('lease') / medianOf('plainSpread'), 3);
  const exactRatio = round(medianOf('exact') / medianOf('plainOneSlot'), 3);
  const exactToSpreadRatio = round(medianOf('exact') / medianOf('plainSpread'), 3);
  const perRunLease = drains.get('lease')!.map((d, i) => round(d.jobsPerSecond / drains.get('plainSpread')![i].jobsPerSecond, 2));
  const perRunExact = drains.get('exact')!.map((d, i) => round(d.jobsPerSecond / drains.get('plainOneSlot')![i].jobsPerSecond, 2));
  rows.push(
    { part: '1 throughput', measure: 'ratio of medians', case: 'leased / bullmq (3 queues on 3 masters)', value: leaseRatio, unit: '×', pass: leaseRatio >= TARGET_RATIO, detail: `target ≥ ${TARGET_RATIO}; run by run ${perRunLease.join(' / ')}` },
    { part: '1 throughput', measure: 'ratio of medians', case: 'exact / bullmq (3 queues in 1 slot)', value: exactRatio, unit: '×', pass: null, detail: `run by run ${perRunExact.join(' / ')}` },
    { part: '1 throughput', measure: 'ratio of medians', case: 'exact (1 slot) / bullmq (3 masters)', value: exactToSpreadRatio, unit: '×', pass: null, detail: 'one slot puts all of Redis on one master' },
  );
  for (const kind of KEYED_KINDS) {
    try {
      const result = await drain(bench, layoutFor(bench, kind, `${kind.key}`), kind.worker, perQueue, CONCURRENCY, kind.throttles, kind.mode, calls, timeoutMs);
      log(`  ${kind.key}: ${describe(result)}`);
      log(`    Redis commands/job: ${result.topCommands}`);
      rows.push({ ...kindRow(kind, [result]), measure: 'jobs/s (1 run)' });
    } catch (error) {
      if (!(error instanceof StalledError)) throw error;
      log(`  ${kind.key}: ${error.message}; calls while stalled: ${[...calls.scripts.entries()].map(([n, c]) => `${n} ${c}`).join(', ')}`);
      rows.push({ part: '1 throughput', measure: 'jobs/s (1 run)', case: kind.label, value: null, unit: 'jobs/s', pass: false, detail: `STALLED at ${error.done} of ${error.total} jobs (no completion for ${error.stallMs / 1000} s)` });
    }
  }
  return {
    rows, leaseRatio, exactRatio, exactToSpreadRatio,
    leaseTokens: drains.get('lease')!.map((d) => d.tokens!).filter(Boolean),
    notes: [
      `Part 1: ${perQueue.toLocaleString('en-US')} jobs per queue × 3 queues added with addBulk before the workers start; one worker per queue, each on its own`,
      `  Cluster client, concurrency ${CONCURRENCY}, trivial processor; jobs/s from the first processor call to the last 'completed'. Kinds alternate, ${runs} runs each.`,
      "  Throttle 'all' 10,000,000/1s (never binds); the keyed rows add 'per-customer' 1,000,000/1s keyed on data.customer (1,000 customers), one run each.",
      '  3 masters: queues {qN} under a tagless prefix (one per master; the namespace slot is on one of them, never a queue\'s slot): leased.',
      '  1 slot: prefix {tag}: queues and namespace in one slot on one master: exact. The plain rows drain the same layouts without throttles.',
      '  detail: node = this process\'s CPU per job (every worker runs here), ELU = event-loop utilisation, Redis = masters + replicas CPU per job,',
      '  cmds/job = commands the masters executed per job (inside scripts included); limited/delivered = throttleStats(\'all\') limitedTotal / deliveredTotal',
      '  (limitedTotal grows by a class\'s held jobs each time the class starts waiting on a bucket: in leased delivery, for a token not there yet).',
    ],
  };
}
