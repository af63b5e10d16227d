import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/resumeThrottle-2.lua, in the namespace's slot: lifts pauses of a throttle (ThrottleAdmin.resume): every pause
 * of it, or the pause of one bucket. The caller wakes each queue (lua/wakeBuckets-3.lua).
 */
export const resumeThrottleScript = fixedKeysScript('resumeThrottle', ['pauses', 'limits']);

/** ARGV[1] that lifts every pause of the throttle (the whole throttle's and each bucket's). */
export const EVERY_PAUSE = '';

export interface ResumeThrottleInput {
  /** KEYS[1]: the throttle's pauses (HASH); KEYS[2]: its limits (HASH: field p). */
  readonly pauses: string;
  readonly limits: string;
  /** EVERY_PAUSE, '*' (the whole throttle's pause) or a bucket segment. */
  readonly segment: string;
}

/** Resolves to the number of pauses lifted. */
export function runResumeThrottle(runner: ScriptRunner, input: ResumeThrottleInput): Promise<number> {
  return sendCall(runner, fixedCall(resumeThrottleScript, { pauses: input.pauses, limits: input.limits }, [input.segment])).then(Number);
}
