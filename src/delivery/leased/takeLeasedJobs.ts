import { ScriptRunner } from '../../lua/scripts';
import { CallerUnits, Deposit, LeaseReply, runTakeLeasedJobs } from '../../lua/calls/takeLeasedJobs';
import { TakeCall, TakeReply } from '../../lua/calls/takeNextJobs';

// The leased delivery script's input and reply are the script layer's (src/lua/calls/takeLeasedJobs.ts); exported here as before.
export type { CallerUnits, Deposit, LeaseReply, ReturnGroup } from '../../lua/calls/takeLeasedJobs';
export { returnGroupAt } from '../../lua/calls/takeLeasedJobs';

const NO_UNITS: CallerUnits = { throttles: [], free: [], freed: [] };

/**
 * One leased delivery call (lua/takeLeasedJobs-19.lua): deposits, then delivery as takeNextJobs. `knownNode`:
 * the queue node's identity the worker saw in its last reply ('' for none).
 */
export async function takeLeasedJobs(
  runner: ScriptRunner, call: TakeCall, wantsLimit: number, refillBelow: number, deposits: readonly Deposit[], depositsNode: string,
  units: CallerUnits = NO_UNITS, knownNode = '',
): Promise<{ reply: TakeReply; lease: LeaseReply }> {
  return runTakeLeasedJobs(runner, { take: call, wantsLimit, knownNode, depositsNode, refillBelow, deposits, units });
}
