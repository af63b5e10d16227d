import type { Job } from 'bullmq';
// A namespace import: the same bullmq module as the Worker's (ESM or CommonJS), and no link error for names a line lacks.
import * as bullmq from 'bullmq';
import { BullmqAdapter, FinishArgs, Finished, Gate } from './BullmqAdapter';
import { settleOnReady } from './settleOnReady';

/** bullmq 5's Scripts, as far as delivery goes (the Worker's `scripts`, which its jobs share, see gateJobScripts). */
interface Scripts5 {
  moveToActive(client: unknown, token: string, name?: string): Promise<unknown[]>;
  moveToFinishedArgs(job: unknown, val: unknown, propVal: unknown, shouldRemove: unknown, target: unknown, token: string, ...rest: unknown[]): FinishArgs;
  moveToFinished(jobId: string, args: FinishArgs): Promise<unknown>;
  moveToDelayed(jobId: string, timestamp: number, delay: number, token?: string, opts?: { fetchNext?: boolean }): Promise<unknown>;
  moveToCompletedArgs(...args: unknown[]): FinishArgs;
  finishedErrors(error: { code: number; jobId: string; command: string; state: string }): Error;
}

interface Worker5 {
  readonly scripts: Scripts5;
  readonly keys: Readonly<Record<string, string>>;
  readonly client: Promise<unknown>;
  readonly closing?: unknown;
  readonly opts: { name?: string; lockDuration?: number };
  moveToActive(client: unknown, token: string, name?: string): Promise<Job | undefined>;
}

/** moveToFinished's ARGV[5] (target) and ARGV[6] (fetch next) in the args array, after its 14 keys. */
const TARGET = 14 + 4;
const FETCH_NEXT = 14 + 5;

/** Marks a ThrottledWorker of bullmq 5, whose jobs must use its (gated) scripts. */
const GATED = Symbol('bullmq-throttle gated scripts');

/**
 * bullmq 5 (5.67 and later): the Worker fetches through its protected moveToActive(client, token, name),
 * which calls `scripts.moveToActive`; a job fetches its slot's next job inside moveToFinished (completed or
 * failed) or moveToDelayed (a retry with backoff, from 5.81) with fetch-next on, through the job's `scripts`.
 * So the worker's scripts deliver through the gate and turn fetch-next off in every moveToFinished and
 * moveToDelayed, fetching the next job through the gate instead; every job built on the worker (by the
 * worker, or by the user's Job.fromJSON(worker, ...)) uses those scripts.
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
    const w = worker as Worker5 & { [GATED]?: true };
    // 5.x resets an overdue blocking connection as 6.x does, and hangs alike on a failing cluster (src/bullmq/settleOnReady.ts).
    const blocking = (worker as { blockingConnection?: { reconnect?: () => Promise<void>; client: Promise<unknown> } }).blockingConnection;
    if (blocking && typeof blocking.reconnect === 'function') blocking.reconnect = settleOnReady(blocking.reconnect.bind(blocking), () => blocking.client);
    const scripts = w.scripts;
    const moveToFinishedArgs = scripts.moveToFinishedArgs.bind(scripts);
    const moveToFinished = scripts.moveToFinished.bind(scripts);
    const moveToDelayed = scripts.moveToDelayed.bind(scripts);
    gate.attach({
      get client() { return w.client; },
      keys: w.keys,
      get closing() { return w.closing; },
      get connection() { return (w as { connection?: unknown }).connection; },
      moveToCompletedArgs: scripts.moveToCompletedArgs.bind(scripts),
      finishedErrors: scripts.finishedErrors.bind(scripts),
      moveToFinished,
    }, w.opts);
    scripts.moveToActive = (_client, token, name) => gate.deliver(token, name);
    // moveToCompletedArgs and moveToFailedArgs build moveToFinished's arguments here, with the token.
    const tokens = new WeakMap<FinishArgs, string>();
    scripts.moveToFinishedArgs = (...args) => {
      const built = moveToFinishedArgs(...args);
      tokens.set(built, args[5]);
      return built;
    };
    scripts.moveToFinished = async (jobId, args) => {
      const argv = [...args];
      // bullmq decided whether to fetch next (off while the worker closes); the gate fetches instead.
      const fetchNext = Number(argv[FETCH_NEXT]) === 1;
      argv[FETCH_NEXT] = 0;
      const token = tokens.get(args);
      // Completions go in batches through the installed bullmq's moveToFinished (JobCompleter). Failures are
      // not, so no refused-token check covers them: their next fetch goes once the failure is recorded.
      const finishing = argv[TARGET] === 'completed' ? gate.completeFromArgs(jobId, argv) : Promise.resolve(await moveToFinished(jobId, argv));
      // Arguments built elsewhere than here fetch no next job at all, rather than an ungated one.
      if (token === undefined) return finishing;
      return (await gate.finishThenFetch(finishing.then((result): Finished => ({ result })), token, fetchNext)).result;
    };
    scripts.moveToDelayed = async (jobId, timestamp, delay, token, opts = {}) =>
      gate.fetchAfterMove(await moveToDelayed(jobId, timestamp, delay, token, { ...opts, fetchNext: false }), token, Boolean(opts.fetchNext));
    w[GATED] = true;
    gateJobScripts();
  },

  moveToActive(worker: object, token: string): Promise<Job | undefined> {
    const w = worker as Worker5;
    return w.client.then((client) => w.moveToActive(client, token, w.opts.name));
  },
};

let jobScriptsGated = false;

/**
 * Before 5.81 each Job builds a Scripts of its own (with the same keys and client as its queue's) instead
 * of using its queue's: a job of a ThrottledWorker then uses the worker's gated scripts, as from 5.81 on
 * every job does. Jobs of Queues and plain Workers are left as they are.
 */
function gateJobScripts(): void {
  if (jobScriptsGated) return;
  jobScriptsGated = true;
  const proto = (bullmq as unknown as { Job: { prototype: { createScripts(): void } } }).Job.prototype;
  const createScripts = proto.createScripts;
  proto.createScripts = function (this: { queue?: { [GATED]?: true; scripts?: Scripts5 }; scripts?: Scripts5 }) {
    if (this.queue?.[GATED] && this.queue.scripts) this.scripts = this.queue.scripts;
    else createScripts.call(this);
  };
}
