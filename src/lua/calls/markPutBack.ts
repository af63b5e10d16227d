import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/markPutBack-2.lua, on the queue: marks a job its worker puts back (it would have started too late, or its
 * processor threw RetryAfterError) before bullmq moves it to wait, so that it goes first among its priority again;
 * a late job's start is taken back from attemptsStarted (once per mark).
 */
export const markPutBackScript = fixedKeysScript('markPutBack', ['putBack', 'job']);

export enum MarkPutBackReply {
  /** The job was marked now. */
  Marked = 1,
  /** It was marked already (a call sent again after a lost reply): nothing changed. */
  AlreadyMarked = 0,
}

/** ARGV[2]: what the mark does with the start its delivery counted in attemptsStarted. */
export enum PutBackStart {
  /** Take it back: the processor never ran (a job put back for starting late). */
  TakeBack = 1,
  /** Keep it: the processor ran (RetryAfterError). */
  Keep = 0,
}

export interface MarkPutBackInput {
  /** KEYS[1]: the queue's put-back jobs (SET). */
  readonly putBack: string;
  /** KEYS[2]: the job's hash (bullmq's). */
  readonly job: string;
  readonly jobId: string;
  readonly start: PutBackStart;
}

export function runMarkPutBack(runner: ScriptRunner, input: MarkPutBackInput): Promise<MarkPutBackReply> {
  return sendCall(runner, fixedCall(markPutBackScript, { putBack: input.putBack, job: input.job }, [input.jobId, input.start]))
    .then((raw) => (Number(raw) === MarkPutBackReply.Marked ? MarkPutBackReply.Marked : MarkPutBackReply.AlreadyMarked));
}
