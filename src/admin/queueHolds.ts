import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runReadQueueHolds } from '../lua/calls/readQueueHolds';

/** What the throttle layer holds of one queue, read at one moment (QueueStats' figures add up). */
export interface QueueHolds {
  /** Jobs held in their classes (waiting for room, or about to go). */
  held: number;
  /** Of those, waiting on a full bucket. */
  blocked: number;
  /** Taken from wait and being classified. */
  classifying: number;
  /** When the job waiting longest on a full bucket began to (ms, the queue node's clock); null: none waits. */
  oldestWaitingSince: number | null;
  /** The queue node's clock at the read (ms). */
  nowMs: number;
}

/**
 * One script on the queue's slot (lua/readQueueHolds-n.lua: every key is the queue's): the held and blocked counts,
 * intake, the oldest waiting job over the throttles and the node's time, so that "held" never reads fewer than
 * "on full buckets".
 */
export async function readQueueHolds(runner: ScriptRunner, q: QueueThrottleKeys, throttles: readonly string[]): Promise<QueueHolds> {
  const reply = await runReadQueueHolds(runner, { state: q.state, intake: q.intake, held: throttles.map((name) => q.throttleStats(name).held) });
  return {
    held: Math.max(0, reply.held),
    blocked: Math.max(0, reply.blocked),
    classifying: reply.classifying,
    oldestWaitingSince: reply.oldestWaitingMs,
    nowMs: reply.nowMs,
  };
}
