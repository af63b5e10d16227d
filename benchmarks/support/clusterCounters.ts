import type IORedis from 'ioredis';
import { redisCpuDelta, redisCpuSnapshot, RedisCpuSnapshot } from './redisCpu';

/**
 * INFO counters of every master added up (replicas left out: they replay the masters' writes and serve no
 * client here). Subtract two snapshots for what happened in between.
 */
export interface ClusterCounters {
  total: RedisCpuSnapshot;
  /** Per master, same order as the connections. */
  perMaster: RedisCpuSnapshot[];
  /** CPU of the replicas together (µs). */
  replicaCpuUsec: number;
}

export async function clusterCounters(masters: readonly IORedis[], replicas: readonly IORedis[] = []): Promise<ClusterCounters> {
  const [perMaster, perReplica] = await Promise.all([
    Promise.all(masters.map((redis) => redisCpuSnapshot(redis))),
    Promise.all(replicas.map((redis) => redisCpuSnapshot(redis))),
  ]);
  return { total: sum(perMaster), perMaster, replicaCpuUsec: perReplica.reduce((s, r) => s + r.serverCpuUsec, 0) };
}

export function clusterCountersDelta(before: ClusterCounters, after: ClusterCounters): ClusterCounters {
  const perMaster = after.perMaster.map((snapshot, i) => redisCpuDelta(before.perMaster[i], snapshot));
  return { total: sum(perMaster), perMaster, replicaCpuUsec: after.replicaCpuUsec - before.replicaCpuUsec };
}

function sum(snapshots: readonly RedisCpuSnapshot[]): RedisCpuSnapshot {
  const calls: Record<string, number> = {};
  for (const snapshot of snapshots) for (const [name, count] of Object.entries(snapshot.calls)) calls[name] = (calls[name] ?? 0) + count;
  return {
    evalshaUsec: snapshots.reduce((s, x) => s + x.evalshaUsec, 0),
    evalshaCalls: snapshots.reduce((s, x) => s + x.evalshaCalls, 0),
    serverCpuUsec: snapshots.reduce((s, x) => s + x.serverCpuUsec, 0),
    calls,
  };
}

/** Commands that are not the workload's: the benchmark's INFO/FLUSHALL, ioredis's CLUSTER SLOTS refreshes, cluster bus chatter. */
const BOOKKEEPING = /^(info|flushall|cluster\|.*|client\|.*|ping|command.*|select|readonly|hello)$/;
/** Script invocations: their commands are counted one by one as well. */
const SCRIPT_CALLS = new Set(['evalsha', 'evalsha_ro', 'eval', 'eval_ro', 'script|load']);

/**
 * Commands of the workload executed by the masters: every command a client sent plus every command a
 * script ran (Redis counts both in commandstats), the script invocations themselves and bookkeeping left out.
 */
export function workloadCommands(snapshot: RedisCpuSnapshot): number {
  return Object.entries(snapshot.calls).reduce((s, [name, calls]) => s + (BOOKKEEPING.test(name) || SCRIPT_CALLS.has(name) ? 0 : calls), 0);
}

/** The `top` commands by calls per `per` (e.g. per delivery), for logs: "zadd 3.10, hget 2.00, ...". */
export function topCommands(snapshot: RedisCpuSnapshot, per: number, top = 12): string {
  return Object.entries(snapshot.calls)
    .filter(([name, calls]) => calls > 0 && !BOOKKEEPING.test(name))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, calls]) => `${name} ${(calls / per).toFixed(2)}`)
    .join(', ');
}
