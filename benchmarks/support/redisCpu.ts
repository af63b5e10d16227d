import type { Redis } from 'ioredis';
import { infoField } from '../machine';

/** Cumulative Redis counters, read from INFO: subtract two snapshots for what happened in between. */
export interface RedisCpuSnapshot {
  /** cmdstat_evalsha usec: time spent in scripts called by sha (bullmq's and ours), commands inside included. */
  evalshaUsec: number;
  evalshaCalls: number;
  /** used_cpu_user + used_cpu_sys of the server process, in µs: everything, network I/O included. */
  serverCpuUsec: number;
  /** Calls per command (cmdstat_<name>), commands run inside scripts included. */
  calls: Record<string, number>;
}

/** Commands that are the scripts themselves or the benchmark's own bookkeeping, left out of commandsCalled(). */
const NOT_WORK = new Set(['evalsha', 'evalsha_ro', 'eval', 'eval_ro', 'info', 'config|resetstat', 'scan', 'del']);

/** Commands executed (inside scripts or not), the scripts' own calls and the benchmark's INFO/SCAN/DEL left out. */
export function commandsCalled(snapshot: RedisCpuSnapshot): number {
  return Object.entries(snapshot.calls).reduce((sum, [name, calls]) => sum + (NOT_WORK.has(name) ? 0 : calls), 0);
}

function commandStat(info: string, command: string): { calls: number; usec: number } {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+),usec=(\\d+)`, 'm').exec(info);
  return match ? { calls: Number(match[1]), usec: Number(match[2]) } : { calls: 0, usec: 0 };
}

/**
 * Reads the counters. No CONFIG RESETSTAT: differences of snapshots give the same numbers and leave a
 * shared Redis (REDIS_URL) untouched; there, other clients' traffic is counted too.
 */
export async function redisCpuSnapshot(redis: Redis): Promise<RedisCpuSnapshot> {
  const [commands, cpu] = await Promise.all([redis.info('commandstats'), redis.info('cpu')]);
  const evalsha = commandStat(commands, 'evalsha');
  const seconds = Number(infoField(cpu, 'used_cpu_user')) + Number(infoField(cpu, 'used_cpu_sys'));
  const calls: Record<string, number> = {};
  for (const match of commands.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]] = Number(match[2]);
  return { evalshaUsec: evalsha.usec, evalshaCalls: evalsha.calls, serverCpuUsec: Math.round(seconds * 1e6), calls };
}

export function redisCpuDelta(before: RedisCpuSnapshot, after: RedisCpuSnapshot): RedisCpuSnapshot {
  return {
    evalshaUsec: after.evalshaUsec - before.evalshaUsec,
    evalshaCalls: after.evalshaCalls - before.evalshaCalls,
    serverCpuUsec: after.serverCpuUsec - before.serverCpuUsec,
    calls: Object.fromEntries(Object.entries(after.calls).map(([name, calls]) => [name, calls - (before.calls[name] ?? 0)])),
  };
}
