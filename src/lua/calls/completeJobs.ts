import type { FinishArgs } from '../../bullmq/BullmqAdapter';
import { ScriptRunner } from '../scripts';
import { ScriptArg, sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/completeJobs-n.lua, on the queue: completes several active jobs in one call, each exactly as the installed
 * bullmq's own moveToFinished does (without fetching a next job); a refused completion's lock token goes into
 * refused-tokens.
 */
export const completeJobsScript = variableKeysScript('completeJobs');

/**
 * The layout of bullmq's moveToFinished call as its moveToCompletedArgs builds it: 14 KEYS (the job's key the 12th,
 * after it the metrics and marker keys), then 9 ARGV.
 */
export const FINISH_KEY_COUNT = 14;
/** The job's key (KEYS[12]). */
export const FINISH_JOB_KEY = 11;
/** KEYS[11]: the queue's completed set. */
export const FINISH_COMPLETED_KEY = 10;
export const FINISH_ARG_COUNT = 9;

/** moveToFinished's codes (bullmq's ErrorCode) a completion's answer may carry, besides 0. */
export enum FinishCode {
  Done = 0,
  /** The job is gone. */
  JobMissing = -1,
  /** The job's lock is gone (or is another's). */
  LockMissing = -2,
}

/** moveToFinished's answer is one of its error codes (negative), which bullmq's finishedErrors turns into an error. */
export function isFinishError(code: number): boolean {
  return code < FinishCode.Done;
}

/**
 * One job's answer: moveToFinished's reply (FinishCode.Done, or its negative error code), or the message of the
 * error it raised (each job's completion is caught on its own).
 */
export type CompletionAnswer = number | string;

export interface CompleteJobsInput {
  /** Each job's moveToFinished KEYS and ARGV (moveToCompletedArgs, fetch next off): all share every key but the job's. */
  readonly jobs: readonly FinishArgs[];
  /** KEYS[14 + K]: the queue's refused-tokens (SET). */
  readonly refusedTokens: string;
}

/** Two completions can go in one call: they share every key of moveToFinished but the job's (one queue, to 'completed'). */
export function completionsShareKeys(args: FinishArgs, first: FinishArgs): boolean {
  for (let i = 0; i < FINISH_KEY_COUNT; i++) if (i !== FINISH_JOB_KEY && args[i] !== first[i]) return false;
  return true;
}

/** Resolves to one answer per job, in order. */
export function runCompleteJobs(runner: ScriptRunner, input: CompleteJobsInput): Promise<CompletionAnswer[]> {
  const first = input.jobs[0];
  const keys = [
    ...first.slice(0, FINISH_JOB_KEY), ...input.jobs.map((job) => job[FINISH_JOB_KEY]), ...first.slice(FINISH_JOB_KEY + 1, FINISH_KEY_COUNT), input.refusedTokens,
  ] as string[];
  const args: ScriptArg[] = [input.jobs.length];
  for (const job of input.jobs) {
    const argv = job.slice(FINISH_KEY_COUNT, FINISH_KEY_COUNT + FINISH_ARG_COUNT);
    for (let i = 0; i < FINISH_ARG_COUNT; i++) args.push(argValue(argv[i]));
  }
  return sendCall(runner, variableCall(completeJobsScript, keys, args)) as Promise<CompletionAnswer[]>;
}

/** As ioredis sends an argument (bullmq leaves "no fields to update" undefined). */
function argValue(value: FinishArgs[number]): ScriptArg {
  if (value === undefined || value === null) return '';
  if (typeof value === 'boolean') return String(value);
  return value;
}
