import { raw2NextJobData } from 'bullmq';
import { ScriptRunner } from '../../lua/scripts';
import {
  completionsShareKeys, FINISH_COMPLETED_KEY, FINISH_KEY_COUNT, FinishCode, isFinishError, runCompleteJobs,
} from '../../lua/calls/completeJobs';
import { FinishArgs, GatedQueue } from '../../bullmq/BullmqAdapter';
import { CompletionInDoubtError } from '../../errors/CompletionInDoubtError';
import { RedisClient } from '../../redis/connection';
import { failedInTransit } from '../../redis/redisErrorKind';
import { PendingRequest, RequestBatcher } from '../../redis/requestBatcher';

interface Completion {
  jobId: string;
  /** moveToFinished's KEYS and ARGV, as bullmq's moveToCompletedArgs builds them. */
  args: FinishArgs;
}

/** Most completions one call carries. */
const MAX_BATCH = 64;
/**
 * A completion that got no answer (a failover, a lost connection) is sent again after this long, doubling up
 * to the most: short, since ioredis itself already spends up to ~1.6 s (16 redirections 100 ms apart) on a
 * call before it gives up, and a job's slot waits for its completion.
 */
const RETRY_FIRST_MS = 100;
const RETRY_MOST_MS = 1_000;

export interface JobCompleterOptions {
  queue: string;
  backend: GatedQueue;
  /** Runs the batches; none before the gate connects, when each completion goes alone through bullmq (completeAlone). */
  runner?: ScriptRunner;
  /** Where a refused completion's token goes, so that the slot's next fetch gets no job (see lua/completeJobs-n.lua). */
  refusedTokensKey: string;
  /** bullmq's own moveToFinished call, for completions a batch could not make. */
  completeAlone: (jobId: string, args: FinishArgs) => Promise<unknown>;
  /** True once the worker closes: a completion then stops trying (as bullmq's retryIfFailed does). */
  closing: () => boolean;
  /** The worker's lockDuration: when a completion left in doubt is taken back by bullmq's stalled-job check. */
  lockDuration: number;
  report: (task: string, error: unknown) => void;
  recovered: (task: string) => void;
}

const TASK = 'completing jobs';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Completes a worker's jobs in batches (lua/completeJobs-n.lua, which runs the installed bullmq's own
 * moveToFinished once per job): completions that arrive while a call is in flight go together in the next,
 * or sooner, just ahead of the next delivery call (flush).
 * Each job is completed exactly as bullmq's backend would complete it without fetching a next job, and
 * fails with the same errors; an error one job's completion raises is that job's alone. Should a call fail
 * as a whole because Redis refused the script (not a failover), each of its jobs is completed on its own
 * through bullmq.
 *
 * A completion whose call got no answer (failedInTransit: a failover, a lost connection, ioredis giving up
 * after its redirections) is sent again until Redis answers, as bullmq retries its own moveToFinished on
 * connection errors (Worker.retryIfFailed), but without bullmq's runRetryDelay (15 s by default) and for every
 * error of a failover, not just a closed connection: bullmq hands any other error of a completion to
 * handleFailed, which would fail a job whose processor succeeded. Sending it again is idempotent: a
 * completion that landed the first time finds its lock gone (or the job removed, with removeOnComplete),
 * and then the job in the completed set; it resolves as completed (so does one that ioredis itself sent
 * again after a dropped connection). Once the worker closes it stops trying
 * and rejects with CompletionInDoubtError, which ThrottledWorker never turns into a failure: the job is left
 * to bullmq's stalled-job check.
 */
export class JobCompleter {
  private readonly batcher = new RequestBatcher<Completion, unknown>((batch) => this.serve(batch), MAX_BATCH, 1);

  private readonly backend: GatedQueue;
  /** Completions sent again after a call that got no answer, not yet answered. */
  private retrying = 0;

  constructor(private readonly options: JobCompleterOptions) {
    this.backend = options.backend;
  }

  /**
   * Sends the completions waiting for a call now, whatever is in flight: a delivery call about to go then
   * carries them just ahead of it on the same connection, so that a completion takes no longer than its
   * slot's next fetch (which bullmq awaits after it).
   */
  flush(): void {
    this.batcher.flush();
  }

  /** bullmq 6's backend.moveToCompleted without fetching, in a batch. */
  async complete(job: never, returnValue: unknown, removeOnComplete: never, token: string): Promise<{ result: unknown; finishedOn: unknown }> {
    // As bullmq's moveToCompleted: a return value JSON cannot hold fails the completion.
    const value = JSON.stringify(returnValue);
    const args = this.backend.moveToCompletedArgs(job, value, removeOnComplete, token, false);
    // As bullmq's backend answers a completion that fetched nothing.
    return { result: await this.completeFromArgs(String((job as { id?: unknown }).id), args), finishedOn: args[FINISH_KEY_COUNT + 1] };
  }

  /** bullmq's moveToFinished for target 'completed' with fetch-next off, in a batch: answers as it does (an empty reply). */
  async completeFromArgs(jobId: string, args: FinishArgs): Promise<unknown[]> {
    const answer = await this.sendUntilAnswered(jobId, args);
    // The error bullmq's own call would have raised (lua/completeJobs-n.lua catches it per job).
    if (typeof answer === 'string') throw new Error(answer);
    const code = Number(answer);
    if (isFinishError(code)) {
      // Not only after our own retries: ioredis resends a call whose connection dropped before the reply came
      // (autoResendUnfulfilledCommands; Cluster after a failover), so a first answer can be to a second send.
      if (await this.landedBefore(jobId, args, code)) return raw2NextJobData(FinishCode.Done as unknown as unknown[]);
      throw this.backend.finishedErrors({ code, jobId, command: 'moveToFinished', state: 'active' });
    }
    return raw2NextJobData(code as unknown as unknown[]);
  }

  /** Sends the completion until Redis answers it. */
  private async sendUntilAnswered(jobId: string, args: FinishArgs): Promise<unknown> {
    let waitMs = 0;
    let inDoubt = false;
    try {
      for (;;) {
        try {
          const answer = await this.batcher.submit({ jobId, args });
          if (inDoubt && --this.retrying === 0) this.options.recovered(TASK);
          return answer;
        } catch (error) {
          if (!failedInTransit(error)) throw error;
          if (!inDoubt) this.retrying++;
          inDoubt = true;
          if (this.options.closing()) {
            throw new CompletionInDoubtError(
              `ThrottledWorker('${this.options.queue}'): job ${jobId} was processed, but its completion got no answer from Redis before the worker `
              + `closed (${(error as Error).message}). The job is not failed: bullmq's stalled-job check moves it back to wait once its lock `
              + `lapses (lockDuration ${this.options.lockDuration} ms) and it runs again; make the processor idempotent, or close the worker `
              + 'only once Redis answers, to avoid the second run.',
              jobId, error,
            );
          }
          this.options.report(TASK, error);
          waitMs = Math.min(Math.max(RETRY_FIRST_MS, waitMs * 2), RETRY_MOST_MS);
          await sleep(waitMs);
        }
      }
    } catch (error) {
      if (inDoubt && --this.retrying === 0) this.options.recovered(TASK);
      throw error;
    }
  }

  /**
   * The completion found the job's lock gone (or the job gone: moveToFinished's codes for what a completion that did land
   * finds when it is sent again): it landed before, in a send whose answer was
   * lost, when the job is in the completed set (or was removed, as removeOnComplete does: a job this worker
   * holds locked cannot be removed otherwise, unless Redis itself lost it). Otherwise the lock lapsed and the
   * stalled-job check took the job back: bullmq's error stands.
   */
  private async landedBefore(jobId: string, args: FinishArgs, code: number): Promise<boolean> {
    if (code === FinishCode.JobMissing) return true;
    if (code !== FinishCode.LockMissing) return false;
    try {
      const client = (await this.backend.client) as RedisClient;
      return (await client.zscore(String(args[FINISH_COMPLETED_KEY]), jobId)) !== null;
    } catch {
      return false;
    }
  }

  private async serve(batch: PendingRequest<Completion, unknown>[]): Promise<void> {
    const runner = this.options.runner;
    const first = batch[0].request.args;
    // One call serves completions that share every key but the job's (the same queue, to 'completed').
    const together = runner ? batch.filter((p) => completionsShareKeys(p.request.args, first)) : [];
    const alone = batch.filter((p) => !together.includes(p));
    try {
      if (runner && together.length > 0) {
        const codes = await runCompleteJobs(runner, { jobs: together.map((p) => p.request.args), refusedTokens: this.options.refusedTokensKey });
        together.forEach((p, i) => p.resolve(codes[i]));
      }
    } catch (error) {
      // No answer (a failover): completeFromArgs sends each again, in a batch once Redis answers.
      if (failedInTransit(error)) together.forEach((p) => p.reject(error as Error));
      else alone.push(...together);
    }
    await Promise.all(alone.map(async (p) => {
      try {
        await this.options.completeAlone(p.request.jobId, p.request.args);
        p.resolve(FinishCode.Done);
      } catch (error) {
        // bullmq's error for a negative code: answered as the batch answers it, so that completeFromArgs
        // judges it the same way (a completion that landed before, or bullmq's error again).
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'number' && isFinishError(code)) p.resolve(code);
        else p.reject(error as Error);
      }
    }));
  }
}
