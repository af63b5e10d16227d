import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, ScriptArg, sendCall } from './scriptCall';

/**
 * lua/countLateLeased-1.lua, the namespace's grantor: the grants a started job's tokens came from count longer, its
 * processor having returned from its synchronous start past their expiry (ProcessorStarts.started says when).
 */
export const countLateLeasedScript = fixedKeysScript('countLateLeased', ['slot']);

/** The tokens one grant gave the job in one bucket. */
export interface LateLeasedGrant {
  readonly bucketId: string;
  readonly grantUs: number;
  /** The lease it was granted with (ms). */
  readonly leaseMs: number;
  readonly count: number;
}

export interface CountLateLeasedInput {
  /** KEYS[1]: the namespace's registry version key (it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  /** How much longer the grants count (ms). */
  readonly byMs: number;
  readonly grants: readonly LateLeasedGrant[];
}

export interface CountLateLeasedReply {
  nowUs: number;
  /** The grants whose bucket still had counters there. */
  moved: number;
  /** The grants whose tokens a window no longer counted: the call came after their release (a grant since may have used the room). */
  missed: number;
}

export function runCountLateLeased(runner: ScriptRunner, input: CountLateLeasedInput): Promise<CountLateLeasedReply> {
  const args: ScriptArg[] = [input.throttlePrefix, Math.ceil(input.byMs), input.grants.length];
  for (const g of input.grants) args.push(g.bucketId, g.grantUs, g.leaseMs, g.count);
  return sendCall(runner, fixedCall(countLateLeasedScript, { slot: input.slot }, args)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), moved: Number(reply[1]), missed: Number(reply[2]) };
  });
}
