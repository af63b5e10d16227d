import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';
import { returnGroupAt, ReturnGroup } from './takeLeasedJobs';

/**
 * lua/withdrawLeases-1.lua, on the queue: takes every leased token out of its pools when its last live ThrottledWorker
 * closes, so that they can be returned (lua/returnLeasedTokens-1.lua); nothing while another worker of the queue lives.
 */
export const withdrawLeasesScript = fixedKeysScript('withdrawLeases', ['workers']);

export interface WithdrawLeasesInput {
  /** KEYS[1]: the queue's workers (ZSET worker id -> lapse ms). */
  readonly workers: string;
  /** The queue base of our keys. */
  readonly queueBase: string;
  /** The closing worker's id. */
  readonly workerId: string;
}

/** Resolves to the tokens taken out, to return (none while another worker lives). */
export function runWithdrawLeases(runner: ScriptRunner, input: WithdrawLeasesInput): Promise<ReturnGroup[]> {
  return sendCall(runner, fixedCall(withdrawLeasesScript, { workers: input.workers }, [input.queueBase, input.workerId])).then((raw) => {
    const reply = raw as unknown[];
    const groups: ReturnGroup[] = [];
    for (let i = 0; i < Number(reply[0]); i++) groups.push(returnGroupAt(reply, 1 + 5 * i));
    return groups;
  });
}
