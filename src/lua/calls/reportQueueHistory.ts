import { ScriptRunner } from '../scripts';
import { BucketHistory, pushBucketHistory } from './readQueueHistory';
import { fixedCall, fixedKeysScript, ScriptArg, sendCall } from './scriptCall';

/**
 * lua/reportQueueHistory-1.lua, the namespace's grantor while it gathers after a restart or failover: what a queue
 * delivered lately (lua/readQueueHistory-1.lua) is counted again, and the queue counts as reported.
 */
export const reportQueueHistoryScript = fixedKeysScript('reportQueueHistory', ['slot']);

export interface ReportQueueHistoryInput {
  /** KEYS[1]: the namespace's registry version key (it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  /** The queue's id (prefix:queue). */
  readonly queueId: string;
  /** How far back the queue's history is whole (us; HISTORY_WHOLE: all of it). */
  readonly wholeForUs: number;
  /** Exact workers (id) and leased queues (prefix:queue) the worker saw alive lately, with "<encoded throttle>:<longest ms>,...". */
  readonly seenAlive: readonly (readonly [string, string])[];
  /** Encoded names of the throttles the queue's workers declare. */
  readonly throttles: readonly string[];
  readonly history: BucketHistory;
}

export interface ReportQueueHistoryReply {
  nowUs: number;
  /** Deliveries counted again (0 when no gather of queues is on, or the queue already reported in this one). */
  counted: number;
}

export function runReportQueueHistory(runner: ScriptRunner, input: ReportQueueHistoryInput): Promise<ReportQueueHistoryReply> {
  const args: ScriptArg[] = [input.throttlePrefix, input.queueId, input.wholeForUs, input.seenAlive.length];
  for (const [id, declared] of input.seenAlive) args.push(id, declared);
  args.push(input.throttles.length, ...input.throttles);
  pushBucketHistory(args, input.history);
  return sendCall(runner, fixedCall(reportQueueHistoryScript, { slot: input.slot }, args)).then((raw) => {
    const reply = raw as number[];
    return { nowUs: Number(reply[0]), counted: Number(reply[1]) };
  });
}
