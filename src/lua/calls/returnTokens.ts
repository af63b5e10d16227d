import type { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { sendCall, ScriptArg, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/returnTokens-n.lua, in the namespace's slot: granted tokens that will not be spent stop counting in their
 * windows (each token once per throttle: a second return is a no-op). Grantor.returnTokens and exact delivery's
 * late jobs (src/delivery/ExactDelivery.ts).
 */
export const returnTokensScript = variableKeysScript('returnTokens');

/** A group's verdict: its tokens stopped counting now (else they had been returned already, or no longer counted). */
export const TOKENS_RETURNED = 1;

/** Tokens of one grant in one bucket of one throttle, to stop counting in its window limits. */
export interface ReturnedGrant {
  /** The throttle's name (not encoded) and the bucket's segment. */
  readonly name: string;
  readonly bucket: string;
  /** Makes a second return of the same grant a no-op (the throttle's returned-set). */
  readonly nonce: string;
  readonly grantUs: number;
  readonly leaseMs: number;
  /** The tokens the grant took (its cost). */
  readonly count: number;
  /** The windows (ms) it was counted in. A rate keeps returned tokens counted (lua/includes/rateCounter.lua). */
  readonly windows: readonly number[];
  /**
   * The bucket's rate TAT (us) the grant read and the one it wrote: the grant is undone while it is the rate's
   * latest (an exact job put back for starting late, lua/includes/rateCounter.lua's rateKind.giveBack).
   */
  readonly rate?: { readonly beforeUs: number; readonly afterUs: number };
}

export interface ReturnTokensInput {
  /** The namespace's keys: the returned-sets and window counters are named from them. */
  readonly keys: ThrottleKeys;
  readonly grants: readonly ReturnedGrant[];
}

export interface ReturnTokensReply {
  /** The Redis time of the return (us). */
  nowUs: number;
  /** Per (token, throttle) group, in order: its tokens stopped counting now. */
  returned: boolean[];
}

/** KEYS (the returned-sets, window counters and rates, each named once) and ARGV for these grants. */
export function returnTokensCall(input: ReturnTokensInput) {
  const { keys, grants } = input;
  const keyIndex = new Map<string, number>();
  const callKeys: string[] = [];
  const indexOf = (key: string): number => {
    let index = keyIndex.get(key);
    if (index === undefined) {
      callKeys.push(key);
      index = callKeys.length;
      keyIndex.set(key, index);
    }
    return index;
  };
  const args: ScriptArg[] = [grants.length];
  for (const grant of grants) {
    args.push(indexOf(keys.returnedTokens(grant.name)), grant.nonce, grant.grantUs, grant.leaseMs, grant.count, grant.windows.length);
    for (const windowMs of grant.windows) args.push(indexOf(keys.windowCounter(grant.name, grant.bucket, windowMs)), windowMs);
    if (grant.rate) args.push(indexOf(keys.rateCounter(grant.name, grant.bucket)), grant.rate.beforeUs, grant.rate.afterUs);
    else args.push(0);
  }
  return variableCall(returnTokensScript, callKeys, args);
}

export function runReturnTokens(runner: ScriptRunner, input: ReturnTokensInput): Promise<ReturnTokensReply> {
  return sendCall(runner, returnTokensCall(input)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), returned: reply.slice(1).map((verdict) => Number(verdict) === TOKENS_RETURNED) };
  });
}
