import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/pauseThrottle-2.lua, in the namespace's slot: pauses a throttle, or one bucket of it (ThrottleAdmin.pause,
 * RetryAfterError); a longer pause already set on the same field stays.
 */
export const pauseThrottleScript = fixedKeysScript('pauseThrottle', ['pauses', 'limits']);

/** ARGV[1] for every bucket of the throttle. */
export const WHOLE_THROTTLE = '*';
/** A pause's end (ARGV[2], and the reply's) when it lasts until resumed. */
export const UNTIL_RESUMED = 0;

export interface PauseThrottleInput {
  /** KEYS[1]: the throttle's pauses (HASH); KEYS[2]: its limits (HASH: field p set). */
  readonly pauses: string;
  readonly limits: string;
  /** WHOLE_THROTTLE or a bucket segment. */
  readonly segment: string;
  /** Until when (ms, Redis clock), or UNTIL_RESUMED. */
  readonly untilMs: number;
  /** For how long (ms from now, this node's clock), used instead of untilMs when above 0. */
  readonly forMs: number;
}

export interface PauseThrottleReply {
  nowMs: number;
  /** The pause now in force on that field (ms, or UNTIL_RESUMED). */
  untilMs: number;
}

export function runPauseThrottle(runner: ScriptRunner, input: PauseThrottleInput): Promise<PauseThrottleReply> {
  const call = fixedCall(pauseThrottleScript, { pauses: input.pauses, limits: input.limits }, [input.segment, input.untilMs, input.forMs]);
  return sendCall(runner, call).then((raw) => {
    const reply = raw as number[];
    return { nowMs: Number(reply[0]), untilMs: Number(reply[1]) };
  });
}
