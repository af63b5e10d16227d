import type { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { IntakeReply, parseIntakeReply } from './intakeJobs';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/reclaimStaleJobs-8.lua, on the queue: takes held jobs of classes from an older config generation back for
 * classification, into the intake set with a lease, exactly as new jobs are taken (the same reply as intakeJobs).
 */
export const reclaimStaleJobsScript = fixedKeysScript('reclaimStaleJobs', [
  'stale', 'classes', 'intake', 'state', 'readyClasses', 'classState', 'blockedSince', 'removedHeld',
]);

export interface ReclaimStaleJobsInput {
  readonly queueKeys: QueueThrottleKeys;
  /** bullmq's key prefix of the queue. */
  readonly bullmqPrefix: string;
  /** The current config generation. */
  readonly gen: string;
  readonly mostJobs: number;
  /** How long a job's lease lasts (ms). */
  readonly leaseMs: number;
  /** Candidate classes (of older generations). */
  readonly classes: readonly string[];
}

export function runReclaimStaleJobs(runner: ScriptRunner, input: ReclaimStaleJobsInput): Promise<IntakeReply> {
  const q = input.queueKeys;
  const call = fixedCall(reclaimStaleJobsScript, {
    stale: q.stale, classes: q.classes, intake: q.intake, state: q.state, readyClasses: q.readyClasses, classState: q.classState,
    blockedSince: q.blockedSince, removedHeld: q.removedHeld,
  }, [input.bullmqPrefix, q.base, input.gen, input.mostJobs, input.leaseMs, ...input.classes]);
  return sendCall(runner, call).then((raw) => parseIntakeReply(raw as unknown[]));
}
