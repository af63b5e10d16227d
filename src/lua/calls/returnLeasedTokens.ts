import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, ScriptArg, sendCall } from './scriptCall';
import type { ReturnGroup } from './takeLeasedJobs';

/**
 * lua/returnLeasedTokens-1.lua, the namespace's grantor: leased tokens that no queue will spend stop counting at once
 * (each group once per throttle: a second return is a no-op).
 */
export const returnLeasedTokensScript = fixedKeysScript('returnLeasedTokens', ['slot']);

export interface ReturnLeasedTokensInput {
  /** KEYS[1]: the namespace's registry version key (it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  readonly groups: readonly ReturnGroup[];
}

export interface ReturnLeasedTokensReply {
  nowUs: number;
  /** The tokens that stopped counting (per bucket, summed). */
  returned: number;
}

export function runReturnLeasedTokens(runner: ScriptRunner, input: ReturnLeasedTokensInput): Promise<ReturnLeasedTokensReply> {
  const args: ScriptArg[] = [input.throttlePrefix, input.groups.length];
  for (const g of input.groups) args.push(g.bucketId, g.grantUs, g.leaseMs, g.nonce, g.count);
  return sendCall(runner, fixedCall(returnLeasedTokensScript, { slot: input.slot }, args)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), returned: Number(reply[1]) };
  });
}
