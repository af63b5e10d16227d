import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { defaultLuaScripts } from '../../src/lua/scripts';

/**
 * Redis time per script, from SLOWLOG with every command logged (BENCH_SLOWLOG=1): which script a job's Redis
 * time goes to, and how much of a script's time its own commands take (the rest is Lua). Opt-in, and only on the
 * benchmark's own redis-server: logging every command slows Redis by some 20 %, and reconfigures the server.
 *
 * Redis runs one command at a time, so a script's commands are logged just before the script itself: a
 * command is counted in the next script logged after it (a client's own commands in between land there too,
 * a few per thousand at most in these benchmarks).
 */
export interface ScriptTime {
  readonly script: string;
  readonly calls: number;
  readonly usec: number;
  /** Of usec, what the script's own commands took. */
  readonly commandsUsec: number;
}

const MAX_ENTRIES = 5_000_000;

export function slowlogWanted(): boolean {
  return process.env.BENCH_SLOWLOG === '1';
}

export async function startScriptTimes(redis: Redis): Promise<void> {
  await redis.config('SET', 'slowlog-max-len', String(MAX_ENTRIES));
  await redis.slowlog('RESET');
  await redis.config('SET', 'slowlog-log-slower-than', '0');
}

/** Stops logging and reads what was logged since startScriptTimes, slowest scripts first. */
export async function readScriptTimes(redis: Redis): Promise<ScriptTime[]> {
  await redis.config('SET', 'slowlog-log-slower-than', '-1');
  const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
  await redis.slowlog('RESET');
  const names = new Map<string, string>();
  for (const script of defaultLuaScripts().values()) names.set(createHash('sha1').update(script.lua).digest('hex'), script.name);
  const times = new Map<string, { calls: number; usec: number; commandsUsec: number }>();
  let commandsUsec = 0;
  // SLOWLOG GET lists the newest first.
  for (const [, , usec, args] of [...entries].reverse()) {
    const command = String(args[0]).toLowerCase();
    if (command !== 'evalsha' && command !== 'eval') {
      commandsUsec += usec;
      continue;
    }
    // SLOWLOG keeps 128 bytes of an argument: an EVAL's script cannot be told by its text.
    const script = command === 'eval' ? 'EVAL (a script sent whole)' : names.get(String(args[1])) ?? 'bullmq\'s scripts';
    const time = times.get(script) ?? { calls: 0, usec: 0, commandsUsec: 0 };
    time.calls++;
    time.usec += usec;
    time.commandsUsec += Math.min(commandsUsec, usec);
    times.set(script, time);
    commandsUsec = 0;
  }
  return [...times.entries()].map(([script, t]) => ({ script, ...t })).sort((a, b) => b.usec - a.usec);
}

/** One line per script: calls and µs a job, µs a call, and the share of its own commands. */
export function describeScriptTimes(times: readonly ScriptTime[], jobs: number, top = 6): string[] {
  return times.slice(0, top).map((t) => `${t.script}: ${(t.calls / jobs).toFixed(3)} calls/job, ${(t.usec / jobs).toFixed(1)} µs/job, `
    + `${(t.usec / t.calls).toFixed(1)} µs/call (its commands ${(t.commandsUsec / t.calls).toFixed(1)})`);
}
