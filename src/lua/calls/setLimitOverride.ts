import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/setLimitOverride-2.lua, in the namespace's slot: sets or clears limits at run time (ThrottleAdmin.setLimits,
 * clearLimits), for the whole throttle or one bucket.
 */
export const setLimitOverrideScript = fixedKeysScript('setLimitOverride', ['overrides', 'limits']);

/** ARGV[1] for the whole throttle's override; EVERY_OVERRIDE (with no limits) clears every override of the throttle. */
export const WHOLE_THROTTLE_OVERRIDE = '*';
export const EVERY_OVERRIDE = '';
/** ARGV[3] for an override until cleared (or until ARGV[4]'s time from now, when above 0). */
export const UNTIL_CLEARED = 0;

export interface SetLimitOverrideInput {
  /** KEYS[1]: the throttle's overrides (HASH); KEYS[2]: its limits (HASH; d: the declared windows). */
  readonly overrides: string;
  readonly limits: string;
  /** WHOLE_THROTTLE_OVERRIDE or a bucket segment; EVERY_OVERRIDE with limits null: every override of the throttle. */
  readonly segment: string;
  /** The limits to set; null clears. */
  readonly windows: readonly { readonly windowMs: number; readonly max: number }[] | null;
  /** Until when (ms, Redis clock), or UNTIL_CLEARED. */
  readonly untilMs: number;
  /** For how long from now (ms), used instead when above 0. */
  readonly forMs: number;
}

export interface SetLimitOverrideReply {
  nowMs: number;
  /** Overrides of the throttle left. */
  left: number;
}

export function runSetLimitOverride(runner: ScriptRunner, input: SetLimitOverrideInput): Promise<SetLimitOverrideReply> {
  const windows = input.windows ? input.windows.map((l) => `${l.windowMs}:${l.max}`).join(',') : '';
  const call = fixedCall(setLimitOverrideScript, { overrides: input.overrides, limits: input.limits }, [input.segment, windows, input.untilMs, input.forMs]);
  return sendCall(runner, call).then((raw) => {
    const reply = raw as number[];
    return { nowMs: Number(reply[0]), left: Number(reply[1]) };
  });
}
