import { ScriptRunner } from '../scripts';
import { sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/readQueueHolds-n.lua, on the queue: what the throttle layer holds of it, read at one moment so that its
 * figures add up (no delivery script runs between the reads).
 */
export const readQueueHoldsScript = variableKeysScript('readQueueHolds');

/** The reply's oldest waiting start when no job waits. */
export const NONE_WAITING = '';

export interface ReadQueueHoldsInput {
  /** KEYS[1]: the queue's state (held, blocked); KEYS[2]: its intake. */
  readonly state: string;
  readonly intake: string;
  /** KEYS[3..]: per throttle declared on the queue, its t:<T>:held (ZSET job -> ms it started waiting). */
  readonly held: readonly string[];
}

export interface ReadQueueHoldsReply {
  /** Jobs held in their classes, as the state counts them. */
  held: number;
  /** Of those, waiting on a full bucket. */
  blocked: number;
  /** In intake (being classified). */
  classifying: number;
  /** When the job waiting longest began to (ms, the node's clock); null: none waits. */
  oldestWaitingMs: number | null;
  /** The node's clock at the read (ms). */
  nowMs: number;
}

export function runReadQueueHolds(runner: ScriptRunner, input: ReadQueueHoldsInput): Promise<ReadQueueHoldsReply> {
  return sendCall(runner, variableCall(readQueueHoldsScript, [input.state, input.intake, ...input.held], [])).then((raw) => {
    const reply = raw as (number | string)[];
    return {
      held: Number(reply[0]),
      blocked: Number(reply[1]),
      classifying: Number(reply[2]),
      oldestWaitingMs: reply[3] === NONE_WAITING ? null : Number(reply[3]),
      nowMs: Number(reply[4]),
    };
  });
}
