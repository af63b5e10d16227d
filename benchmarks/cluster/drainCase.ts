import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Job } from 'bullmq';
import { Key } from '../../src/declarations/Key';
import { Throttle } from '../../src/declarations/Throttle';
import { BenchCluster, Layout } from '../support/benchCluster';
import { ClientCalls } from '../support/clientCalls';
import { clusterCounters, clusterCountersDelta, topCommands, workloadCommands } from '../support/clusterCounters';
import { waitWithProgress } from './progress';
import { ClusterRig } from './clusterRig';

export type DrainKind = 'plain' | 'throttled';

export const CUSTOMERS = 1000;
/** Throttles that never bind: far above any rate reached here, overall and per customer. */
export const NEVER_BINDING = {
  unkeyed: [Throttle.named('all').limit(10_000_000, '1s')],
  keyed: [Throttle.named('all').limit(10_000_000, '1s'), Throttle.named('per-customer').key([Key.data('customer')]).limit(1_000_000, '1s')],
};
export type ThrottleSet = keyof typeof NEVER_BINDING;

export interface Drain {
  jobsPerSecond: number;
  jobs: number;
  nodeCpuUsPerJob: number;
  /** Event-loop utilisation of this process from the first processor call to the last completion (1: never idle). */
  eventLoopUtilization: number;
  eventLoopDelayP99Ms: number;
  redisCpuUsPerJob: number;
  replicaCpuUsPerJob: number;
  /** Jobs per delivery call with slots, and the share of such calls that delivered nothing. */
  jobsPerDeliveryCall: number;
  emptyDeliveryShare: number;
  /** Redis CPU per master (µs/job), in the layout's master order. */
  redisCpuUsPerJobByMaster: number[];
  commandsPerJob: number;
  evalshaPerJob: number;
  /** Commands this process sent (ioredis, pipelined ones counted one by one). */
  sentPerJob: number;
  leaseCallsPerJob: number;
  leaseRequestsPerJob: number;
  deliveryCallsPerJob: number;
  /** Lease mode: tokens of 'all' granted, found expired, returned; deliveries counted by the throttle's stats. */
  tokens?: { granted: number; expired: number; returned: number; delivered: number };
  /**
   * ThrottledWorker: throttleStats('all').limitedTotal / deliveredTotal. limitedTotal grows by a class's held
   * jobs each time the class starts waiting on a bucket: how often jobs were filed away and waited, per delivery.
   */
  limitedPerDelivery?: number;
  /** Calls per job of every command the masters ran (for comparing kinds). */
  commandsByName: Record<string, number>;
  topCommands: string;
  topSent: string;
}

/**
 * Adds `perQueue` jobs to each queue of `layout`, then starts one worker of `kind` per queue and times
 * them from the first processor call to the last completion; checks that each job ran once.
 */
export async function drain(
  bench: BenchCluster, layout: Layout, kind: DrainKind, perQueue: number, concurrency: number, throttleSet: ThrottleSet,
  expectedMode: string | undefined, calls: ClientCalls, timeoutMs: number,
): Promise<Drain> {
  const rig = new ClusterRig(bench, layout);
  try {
    const total = perQueue * layout.queues.length;
    await rig.addBacklog(perQueue, (q, i) => ({ customer: `c${(i * 7 + q) % CUSTOMERS}` }));
    const seen = new Set<string>();
    let duplicates = 0;
    let first = 0;
    let last = 0;
    let completed = 0;
    let failed = 0;
    let eluStart: ReturnType<typeof performance.eventLoopUtilization> | undefined;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    const processor = async (job: Job, q: number): Promise<void> => {
      if (first === 0) {
        first = performance.now();
        eluStart = performance.eventLoopUtilization();
        delay.enable();
      }
      const id = `${q}/${job.id}`;
      if (seen.has(id)) duplicates++;
      seen.add(id);
    };
    calls.reset();
    const before = await clusterCounters(bench.masterConnections, bench.replicaConnections);
    const cpuBefore = process.cpuUsage();
    rig.startWorkers({ kind, concurrency, throttles: NEVER_BINDING[throttleSet] }, processor);
    for (const worker of rig.workers) {
      worker.on('completed', () => { if (++completed === total) last = performance.now(); });
      worker.on('failed', () => { failed++; });
    }
    await waitWithProgress(() => completed, total, () => failed > 0 || rig.errors.length > 0, timeoutMs, `${kind} on ${layout.label}`);
    const elu = performance.eventLoopUtilization(eluStart);
    delay.disable();
    const cpu = process.cpuUsage(cpuBefore);
    const redis = clusterCountersDelta(before, await clusterCounters(bench.masterConnections, bench.replicaConnections));
    rig.assertNoErrors(`${kind} on ${layout.label}`);
    if (expectedMode) rig.assertModes(expectedMode, `${kind} on ${layout.label}`);
    if (failed > 0) throw new Error(`${kind}: ${failed} job(s) failed with a processor that cannot fail`);
    if (duplicates > 0 || seen.size !== total) throw new Error(`${kind}: ${seen.size} distinct jobs processed, ${duplicates} twice (expected ${total}, 0)`);
    let tokens: Drain['tokens'];
    let limitedPerDelivery: number | undefined;
    if (expectedMode) {
      const stats = await rig.throttleAdmin().throttleStats('all');
      limitedPerDelivery = stats.deliveredTotal > 0 ? stats.limitedTotal / stats.deliveredTotal : NaN;
      await rig.closeWorkers(); // returns what the pools still hold (withdrawLeases), counted in `returned`
      if (expectedMode === 'leased delivery') tokens = { granted: calls.grantedOf('all'), expired: stats.tokensExpired, returned: calls.returnedOf('all'), delivered: stats.deliveredTotal };
    }
    calls.learn(bench.openClients());
    const per = (n: number) => n / total;
    return {
      jobsPerSecond: (total * 1000) / (last - first),
      jobs: total,
      nodeCpuUsPerJob: per(cpu.user + cpu.system),
      eventLoopUtilization: elu.utilization,
      eventLoopDelayP99Ms: delay.percentile(99) / 1e6,
      redisCpuUsPerJob: per(redis.total.serverCpuUsec),
      replicaCpuUsPerJob: per(redis.replicaCpuUsec),
      jobsPerDeliveryCall: calls.takes.calls > 0 ? calls.takes.jobs / calls.takes.calls : NaN,
      emptyDeliveryShare: calls.takes.calls > 0 ? calls.takes.empty / calls.takes.calls : NaN,
      redisCpuUsPerJobByMaster: redis.perMaster.map((m) => per(m.serverCpuUsec)),
      commandsPerJob: per(workloadCommands(redis.total)),
      evalshaPerJob: per(redis.total.evalshaCalls),
      sentPerJob: per(calls.sentTotal()),
      leaseCallsPerJob: per(calls.scripts.get('leaseTokens') ?? 0),
      leaseRequestsPerJob: per(calls.leaseRequests),
      deliveryCallsPerJob: per((calls.scripts.get('takeLeasedJobs') ?? 0) + (calls.scripts.get('takeNextJobs') ?? 0)),
      tokens,
      limitedPerDelivery,
      commandsByName: Object.fromEntries(Object.entries(redis.total.calls).filter(([, n]) => n > 0).map(([name, n]) => [name, n / total])),
      topCommands: topCommands(redis.total, total),
      topSent: calls.describeSent(total),
    };
  } finally {
    await rig.close();
  }
}
