import { ScriptRunner } from '../scripts';
import { ScriptArg, sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/lateStartPutBack-n.lua, on the queue, once a job put back for starting late is in wait: its delivery stops
 * counting in the queue's statistics of each throttle it was noted in (and in a leased queue's history), and the
 * classes waiting on its buckets look again now.
 */
export const lateStartPutBackScript = variableKeysScript('lateStartPutBack');

export interface LateStartPutBackInput {
  /** KEYS[1..3]: the queue's wakeups, its lease-room, bullmq's marker of the queue. */
  readonly wakeups: string;
  readonly leaseRoom: string;
  readonly marker: string;
  /** The delivery script's Redis time (us): the slot of :recent the delivery was noted in, and its spend in a leased queue's history. */
  readonly deliveredAtUs: number;
  /** The queue's base of our keys (QueueThrottleKeys.base): a leased queue's history is found under it. */
  readonly queueBase: string;
  /**
   * Per bucket of the job: its id ("<encoded name>=<bucket segment>"), the units it spent there, and its
   * throttle's :stats and :recent of the queue.
   */
  readonly buckets: readonly { readonly bucketId: string; readonly units: number; readonly stats: string; readonly recent: string }[];
}

/** Resolves to the number of buckets woken. */
export function runLateStartPutBack(runner: ScriptRunner, input: LateStartPutBackInput): Promise<number> {
  const keys = [input.wakeups, input.leaseRoom, input.marker, ...input.buckets.flatMap((b) => [b.stats, b.recent])];
  const args: ScriptArg[] = [input.deliveredAtUs, input.queueBase, ...input.buckets.flatMap((b) => [b.bucketId, b.units])];
  return sendCall(runner, variableCall(lateStartPutBackScript, keys, args)).then(Number);
}
