import { raw2NextJobData } from 'bullmq';
import { ScriptRunner } from '../lua/scripts';
import { FinishArgs, GatedQueue } from '../bullmq/BullmqAdapter';
import { PendingRequest, RequestBatcher } from './requestBatcher';

interface Completion {
  jobId: string;
  /** moveToFinished's KEYS and ARGV, as bullmq's moveToCompletedArgs builds them. */
  args: FinishArgs;
}

/** Most completions one call carries. */
const MAX_BATCH = 64;
/** moveToFinished's keys (the job's key is the 12th, after it the metrics and marker keys) and arguments. */
const KEY_COUNT = 14;
const JOB_KEY = 11;
const ARG_COUNT = 9;

/**
 * Completes a worker's jobs in batches (lua/completeJobs-n.lua, which runs the installed bullmq's own
 * moveToFinished once per job): completions that arrive while a call is in flight go together in the next,
 * or sooner, just ahead of the next delivery call (flush).
 * Each job is completed exactly as bullmq's backend would complete it without fetching a next job, and
 * fails with the same errors; an error one job's completion raises is that job's alone. Should a call fail
 * as a whole (the connection, say), each of its jobs is completed on its own through bullmq.
 */
export class JobCompleter {
  private readonly batcher = new RequestBatcher<Completion, unknown>((batch) => this.serve(batch), MAX_BATCH, 1);

  constructor(
    private readonly backend: GatedQueue,
    private readonly runner: () => ScriptRunner | undefined,
    /** Where a refused completion's token goes, so that the slot's next fetch gets no job (see lua/completeJobs-n.lua). */
    private readonly refusedTokensKey: string,
    /** bullmq's own moveToFinished call, for completions a batch could not make. */
    private readonly completeAlone: (jobId: string, args: Completion['args']) => Promise<unknown>,
  ) {}

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
    return { result: await this.completeFromArgs(String((job as { id?: unknown }).id), args), finishedOn: args[KEY_COUNT + 1] };
  }

  /** bullmq's moveToFinished for target 'completed' with fetch-next off, in a batch: answers as it does (an empty reply). */
  async completeFromArgs(jobId: string, args: FinishArgs): Promise<unknown[]> {
    const reply = await this.batcher.submit({ jobId, args });
    // The error bullmq's own call would have raised (lua/completeJobs-n.lua catches it per job).
    if (typeof reply === 'string') throw new Error(reply);
    const code = Number(reply);
    if (code < 0) throw this.backend.finishedErrors({ code, jobId, command: 'moveToFinished', state: 'active' });
    return raw2NextJobData(code as unknown as unknown[]);
  }

  private async serve(batch: PendingRequest<Completion, unknown>[]): Promise<void> {
    const runner = this.runner();
    const first = batch[0].request.args;
    // One call serves completions that share every key but the job's (the same queue, to 'completed').
    const together = runner ? batch.filter((p) => sharesKeys(p.request.args, first)) : [];
    const alone = batch.filter((p) => !together.includes(p));
    try {
      if (together.length > 0) {
        const keys = [...first.slice(0, JOB_KEY), ...together.map((p) => p.request.args[JOB_KEY]), ...first.slice(JOB_KEY + 1, KEY_COUNT), this.refusedTokensKey] as string[];
        const args: (string | number | Buffer)[] = [together.length];
        for (const p of together) {
          const argv = p.request.args.slice(KEY_COUNT, KEY_COUNT + ARG_COUNT);
          for (let i = 0; i < ARG_COUNT; i++) args.push(argValue(argv[i]));
        }
        const codes = (await runner!.run('completeJobs', keys, args)) as unknown[];
        together.forEach((p, i) => p.resolve(codes[i]));
      }
    } catch {
      alone.push(...together);
    }
    await Promise.all(alone.map(async (p) => {
      try {
        await this.completeAlone(p.request.jobId, p.request.args);
        p.resolve(0);
      } catch (error) {
        p.reject(error as Error);
      }
    }));
  }
}

function sharesKeys(args: Completion['args'], first: Completion['args']): boolean {
  for (let i = 0; i < KEY_COUNT; i++) if (i !== JOB_KEY && args[i] !== first[i]) return false;
  return true;
}

/** As ioredis sends an argument (bullmq leaves "no fields to update" undefined). */
function argValue(value: Completion['args'][number]): string | number | Buffer {
  if (value === undefined || value === null) return '';
  if (typeof value === 'boolean') return String(value);
  return value;
}
