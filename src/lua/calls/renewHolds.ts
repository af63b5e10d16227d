import type { HoldRenewal } from '../../delivery/leased/concurrencyHolds';
import { ScriptCallSpec, ScriptRunner } from '../scripts';
import { CallConfirmation, fixedCall, fixedKeysScript } from './scriptCall';

/**
 * lua/renewHolds-1.lua, the namespace's grantor: renews, lowers or drops what one leased worker holds of its
 * throttles' concurrency. Confirmed like a grant (ReplicaConfirmation).
 */
export const renewHoldsScript = fixedKeysScript('renewHolds', ['slot']);

export interface RenewHoldsInput {
  /** KEYS[1]: the namespace's registry version key (it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  /** The worker's id (the holder). */
  readonly holder: string;
  /** A hold's lifetime (ms). */
  readonly holdMs: number;
  /** Per bucket: its id, the units held (0: none), of those the units its jobs in flight use. */
  readonly holds: readonly HoldRenewal[];
}

export interface RenewHoldsReply {
  /** The grantor's clock (ms). */
  nowMs: number;
  /** The units the node counted for the worker before, summed over the buckets named. */
  unitsBefore: number;
  /** Buckets whose hold had lapsed (only their units in use are held again). */
  lapsed: string[];
}

export function renewHoldsCall(input: RenewHoldsInput): ScriptCallSpec {
  return fixedCall(renewHoldsScript, { slot: input.slot }, [input.throttlePrefix, input.holder, input.holdMs, input.holds.length, ...input.holds.flat()]);
}

/**
 * Renews the holds, confirmed like a grant whatever it answers: a renewal a failover loses could let a hold lapse
 * before its worker stops spending it.
 */
export function runRenewHolds(runner: ScriptRunner, input: RenewHoldsInput, confirmation: CallConfirmation): Promise<RenewHoldsReply> {
  return confirmation.run(runner, renewHoldsCall(input), () => true).then(parseRenewHoldsReply);
}

export function parseRenewHoldsReply(raw: unknown): RenewHoldsReply {
  const reply = raw as unknown[];
  return { nowMs: Number(reply[0]), unitsBefore: Number(reply[1]), lapsed: reply.slice(2).map(String) };
}
