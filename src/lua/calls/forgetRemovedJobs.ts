import type { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/forgetRemovedJobs-4.lua, on the queue: reads the queue's events since the last look and stops counting held
 * jobs someone removed (job.remove(), queue.clean).
 */
export const forgetRemovedJobsScript = fixedKeysScript('forgetRemovedJobs', ['events', 'state', 'intake', 'removedHeld']);

export interface ForgetRemovedJobsInput {
  /** KEYS[1]: bullmq's events stream of the queue. */
  readonly events: string;
  /** Its state, intake and removed-held (KEYS[2..4]). */
  readonly queueKeys: QueueThrottleKeys;
  /** Most events to read. */
  readonly mostEvents: number;
}

/** Resolves to the held jobs no longer counted. */
export function runForgetRemovedJobs(runner: ScriptRunner, input: ForgetRemovedJobsInput): Promise<number> {
  const q = input.queueKeys;
  const call = fixedCall(forgetRemovedJobsScript, { events: input.events, state: q.state, intake: q.intake, removedHeld: q.removedHeld }, [input.mostEvents]);
  return sendCall(runner, call).then((raw) => Number((raw as number[])[0]));
}
