import type { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { ScriptArg, sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/countLateStart-n.lua, in the namespace's slot: a started job's tokens count for longer in the windows that
 * counted them with a shorter lease than its start took, and its rates' TATs go later (ProcessorStarts.started says when).
 */
export const countLateStartScript = variableKeysScript('countLateStart');

/** One window of one bucket that counted the job, with the lease it counted it with. */
export interface LateStartWindow {
  /** The throttle's name (not encoded) and the bucket's segment. */
  readonly name: string;
  readonly bucket: string;
  readonly windowMs: number;
  readonly fromLeaseMs: number;
  /** The tokens the job took there (its cost). */
  readonly count: number;
}

/** One rate of a bucket that granted the job: its TAT goes `byUs` later. */
export interface LateStartRate {
  readonly name: string;
  readonly bucket: string;
  /** The TAT the job's grant wrote (us). */
  readonly afterUs: number;
  readonly byUs: number;
}

export interface CountLateStartInput {
  readonly keys: ThrottleKeys;
  /** The delivery script's Redis time (us): the tokens were counted then. */
  readonly grantUs: number;
  /** The lease they count with from now on (ms). */
  readonly toLeaseMs: number;
  readonly windows: readonly LateStartWindow[];
  readonly rates: readonly LateStartRate[];
}

export interface CountLateStartReply {
  nowUs: number;
  /** The windows whose tokens were still counted and now count longer (the others count again until the later release), and the rates moved. */
  moved: number;
  /**
   * What the call came too late for: the windows whose release had passed, and the rates that granted since the
   * job's grant. Starts around this one may exceed the limit (lua/countLateStart-n.lua).
   */
  missed: number;
}

export function countLateStartCall(input: CountLateStartInput) {
  const callKeys = [input.keys.grantorRecord];
  const args: ScriptArg[] = [input.toLeaseMs, input.grantUs, input.windows.length];
  for (const window of input.windows) {
    callKeys.push(input.keys.windowCounter(window.name, window.bucket, window.windowMs));
    args.push(callKeys.length, window.windowMs, window.fromLeaseMs, window.count);
  }
  args.push(input.rates.length);
  for (const rate of input.rates) {
    callKeys.push(input.keys.rateCounter(rate.name, rate.bucket));
    args.push(callKeys.length, rate.afterUs, Math.ceil(rate.byUs));
  }
  return variableCall(countLateStartScript, callKeys, args);
}

export function runCountLateStart(runner: ScriptRunner, input: CountLateStartInput): Promise<CountLateStartReply> {
  return sendCall(runner, countLateStartCall(input)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), moved: Number(reply[1]), missed: Number(reply[2]) };
  });
}
