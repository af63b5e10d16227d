import type { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/releaseHeld-17.lua, on the queue: puts its held jobs back where bullmq keeps waiting jobs, in bounded calls,
 * once no live worker declares throttles on the queue.
 */
export const releaseHeldScript = fixedKeysScript('releaseHeld', [
  'wait', 'prioritized', 'meta', 'active', 'pc', 'marker',
  'state', 'intake', 'readyJobs', 'classes', 'classState', 'readyClasses', 'blockedSince', 'stale', 'removedHeld', 'wakeups',
  'workers',
]);

export enum ReleaseHeldStatus {
  /** Nothing is held any more (the queue's scheduler keys are gone). */
  Done = 1,
  /** Call again. */
  More = 0,
  /** A live worker declares throttles on the queue: nothing was moved. */
  Declared = -1,
}

export interface ReleaseHeldInput {
  /** bullmq's keys of the queue (its QueueKeys), '' its key prefix. */
  readonly bullmqKeys: Readonly<Record<string, string>>;
  readonly queueKeys: QueueThrottleKeys;
  /** Most jobs to move in this call. */
  readonly mostJobs: number;
}

export interface ReleaseHeldReply {
  status: ReleaseHeldStatus;
  /** Jobs put back in this call. */
  released: number;
  /** Jobs still held or in intake. */
  left: number;
}

export function runReleaseHeld(runner: ScriptRunner, input: ReleaseHeldInput): Promise<ReleaseHeldReply> {
  const b = input.bullmqKeys;
  const q = input.queueKeys;
  const call = fixedCall(releaseHeldScript, {
    wait: b.wait, prioritized: b.prioritized, meta: b.meta, active: b.active, pc: b.pc, marker: b.marker,
    state: q.state, intake: q.intake, readyJobs: q.readyJobs, classes: q.classes, classState: q.classState, readyClasses: q.readyClasses,
    blockedSince: q.blockedSince, stale: q.stale, removedHeld: q.removedHeld, wakeups: q.wakeups,
    workers: q.workers,
  }, [b[''], q.base, input.mostJobs]);
  return sendCall(runner, call).then((raw) => {
    const [status, released, left] = (raw as unknown[]).map(Number);
    return { status, released, left };
  });
}
