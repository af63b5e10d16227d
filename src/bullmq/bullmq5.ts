import type { Job } from 'bullmq';
import { BullmqAdapter, FinishArgs, Finished, Gate } from './BullmqAdapter';

/** bullmq 5's Scripts, as far as delivery goes (the Worker's `scripts`, and each Job's). */
interface Scripts5 {
  moveToActive(client: unknown, token: string, name?: string): Promise<unknown[]>;
  moveToFinished(jobId: string, args: FinishArgs): Promise<unknown>;
  moveToDelayed(jobId: string, timestamp: number, delay: number, token?: string, opts?: { fetchNext?: boolean }): Promise<unknown>;
  moveToCompletedArgs(...args: unknown[]): FinishArgs;
  finishedErrors(error: { code: number; jobId: string; command: string; state: string }): Error;
}

interface Job5 {
  scripts: Scripts5;
  moveToCompleted(returnValue: unknown, token: string, fetchNext?: boolean): Promise<unknown>;
  moveToFailed(err: Error, token: string, fetchNext?: boolean): Promise<unknown>;
}

interface Worker5 {
  readonly scripts: Scripts5;
  readonly keys: Readonly<Record<string, string>>;
  readonly client: Promise<unknown>;
  readonly closing?: unknown;
  readonly opts: { name?: string; lockDuration?: number };
  createJob(data: unknown, jobId: string): Job5;
  moveToActive(client: unknown, token: string, name?: string): Promise<Job | undefined>;
}

/** moveToFinished's ARGV[5] (target) and ARGV[6] (fetch next) in the args array, after its 14 keys. */
const TARGET = 14 + 4;
const FETCH_NEXT = 14 + 5;

/**
 * bullmq 5 (5.67 and later): the Worker fetches through its protected moveToActive(client, token, name),
 * which calls `scripts.moveToActive`; a job fetches its slot's next job inside its own moveToCompleted and
 * moveToFailed (moveToFinished, moveToDelayed with fetch-next), through the job's `scripts`, which before
 * 5.81 is a Scripts of its own, not the worker's. So: the worker's scripts deliver through the gate and turn
 * fetch-next off in every moveToFinished and moveToDelayed; each job the worker creates (createJob) uses
 * those scripts and fetches its next job through the gate after it completed or failed.
 *
 * 5.67 is the oldest: from 5.66.2 on, handleCompleted and handleFailed take a next job only from an array
 * result, so that a completion can hand its slot's next job over afterwards (ThrottledWorker.handleCompleted)
 * without bullmq emitting `drained`; before 5.64 they took two more arguments. The Lua our scripts include
 * (prepareJobForProcessing, promoteDelayedJobs, getNextDelayedTimestamp, getTargetQueueList, isQueuePaused,
 * moveToFinished-14) is the same from 5.67.0 to 5.81.5.
 */
export const bullmq5: BullmqAdapter = {
  line: 5,
  supportedRange: '>=5.67.0 <6.0.0',
  luaVariant: 'bullmq5',

  workerConstructorArg(): unknown {
    // bullmq 5's 4th argument is a Connection class: leave bullmq's own.
    return undefined;
  },

  afterConstruct(worker: object, gate: Gate): void {
    const w = worker as unknown as Worker5;
    const scripts = w.scripts;
    const moveToFinished = scripts.moveToFinished.bind(scripts);
    const moveToDelayed = scripts.moveToDelayed.bind(scripts);
    gate.attach({
      get client() { return w.client; },
      keys: w.keys,
      get closing() { return w.closing; },
      moveToCompletedArgs: scripts.moveToCompletedArgs.bind(scripts),
      finishedErrors: scripts.finishedErrors.bind(scripts),
      moveToFinished,
    }, w.opts);
    scripts.moveToActive = (_client, token, name) => gate.deliver(token, name);
    // Fetch-next is off in every completion and failure: the job's own moveToCompleted/moveToFailed
    // (gateJob) fetch the next job through the gate instead.
    scripts.moveToFinished = (jobId, args) => {
      const argv = [...args];
      argv[FETCH_NEXT] = 0;
      // Completions go in batches through the installed bullmq's moveToFinished (JobCompleter).
      return argv[TARGET] === 'completed' ? gate.completeFromArgs(jobId, argv) : moveToFinished(jobId, argv);
    };
    scripts.moveToDelayed = async (jobId, timestamp, delay, token, opts = {}) =>
      gate.fetchAfterMove(await moveToDelayed(jobId, timestamp, delay, token, { ...opts, fetchNext: false }), token, Boolean(opts.fetchNext));
    const createJob = w.createJob.bind(w);
    w.createJob = (data, jobId) => gateJob(createJob(data, jobId), scripts, gate);
  },

  moveToActive(worker: object, token: string): Promise<Job | undefined> {
    const w = worker as unknown as Worker5;
    return w.client.then((client) => w.moveToActive(client, token, w.opts.name));
  },
};

/** A job of the worker: it finishes through the worker's gated scripts and fetches its next job through the gate. */
function gateJob(job: Job5, scripts: Scripts5, gate: Gate): Job5 {
  // Before 5.81 each Job builds a Scripts of its own (same keys and client as the worker's): use the gated one.
  job.scripts = scripts;
  const moveToCompleted = job.moveToCompleted.bind(job);
  const moveToFailed = job.moveToFailed.bind(job);
  // Not enumerable, like the methods they stand for: a job's own properties are its data (toJSON).
  Object.defineProperty(job, 'moveToCompleted', {
    configurable: true,
    writable: true,
    value: (returnValue: unknown, token: string, fetchNext = true) => nextOf(gate.finishThenFetch(finished(moveToCompleted(returnValue, token, false)), token, fetchNext)),
  });
  Object.defineProperty(job, 'moveToFailed', {
    configurable: true,
    writable: true,
    value: (err: Error, token: string, fetchNext = false) => nextOf(gate.finishThenFetch(finished(moveToFailed(err, token, false)), token, fetchNext)),
  });
  return job;
}

/** bullmq 5's finishing calls resolve to the next job's moveToActive reply itself; the gate works on { result }. */
function finished(finishing: Promise<unknown>): Promise<Finished> {
  return finishing.then((result) => ({ result }));
}

function nextOf(done: Promise<Finished>): Promise<unknown> {
  return done.then((d) => d.result);
}
