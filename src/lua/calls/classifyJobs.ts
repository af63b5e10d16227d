import type { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, ScriptArg, sendCall } from './scriptCall';

/**
 * lua/classifyJobs-7.lua, on the queue: places jobs the worker classified, each out of intake and held in its class,
 * in queue order, with its attributes stored.
 */
export const classifyJobsScript = fixedKeysScript('classifyJobs', ['intake', 'state', 'readyJobs', 'classes', 'marker', 'classState', 'putBack']);

/** The reply's code (negative) when the queue's config generation is no longer the call's: nothing was placed. */
export const CLASSIFY_STALE_GENERATION = -1;

/** Where a job is held: its class member, its order, and the attributes to store. */
export interface ClassifiedJob {
  readonly id: string;
  /** Its class ("<gen>/<bucket id>|..."). */
  readonly member: string;
  readonly priority: number;
  readonly lifo: boolean;
  /** Attributes JSON to store ('' to leave as stored). */
  readonly attributes: string;
  /** Its fairness group and that group's declared weight, when the queue has a fairness key. */
  readonly fairness?: { readonly group: string; readonly weight: number };
}

export interface ClassifyJobsInput {
  readonly queueKeys: QueueThrottleKeys;
  /** KEYS[5]: bullmq's marker of the queue. */
  readonly marker: string;
  /** bullmq's key prefix of the queue. */
  readonly bullmqPrefix: string;
  /** The config generation the jobs were classified under. */
  readonly gen: string;
  readonly jobs: readonly ClassifiedJob[];
}

/** Placed (how many), or refused because the config generation moved on (the jobs stay in intake). */
export type ClassifyJobsReply = { readonly staleGeneration: false; readonly placed: number } | { readonly staleGeneration: true };

export function runClassifyJobs(runner: ScriptRunner, input: ClassifyJobsInput): Promise<ClassifyJobsReply> {
  const q = input.queueKeys;
  const args: ScriptArg[] = [input.bullmqPrefix, q.base, input.gen, input.jobs.length];
  for (const job of input.jobs) args.push(job.id, job.member, job.priority, job.lifo ? 1 : 0, job.attributes, job.fairness?.group ?? '', job.fairness?.weight ?? 1);
  const call = fixedCall(classifyJobsScript, {
    intake: q.intake, state: q.state, readyJobs: q.readyJobs, classes: q.classes, marker: input.marker, classState: q.classState, putBack: q.putBack,
  }, args);
  return sendCall(runner, call).then((raw) => {
    const placed = Number((raw as number[])[0]);
    // { placed }, or { CLASSIFY_STALE_GENERATION }: any negative reply is the refusal.
    return placed >= 0 ? { staleGeneration: false, placed } : { staleGeneration: true };
  });
}
