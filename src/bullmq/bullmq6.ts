import type { createRedisBackend, Job, RedisQueueBackend, WorkerOptions } from 'bullmq';
// A namespace import: the same bullmq module as the Worker's (ESM or CommonJS), and no link error on bullmq 5,
// which has no createRedisBackend.
import * as bullmq from 'bullmq';
import { BullmqAdapter, Gate, GatedQueue } from './BullmqAdapter';
import { settleOnReady } from './settleOnReady';

type Backend = RedisQueueBackend & { closing?: unknown; reconnectBlocking?: () => Promise<void>; blockingClient?: Promise<unknown> };

/**
 * bullmq 6: every path by which a job reaches a worker runs through its Redis backend, which the Worker
 * builds with the factory given as its 4th constructor argument. The factory wraps the backend: moveToActive
 * is the gate's delivery, and completions, failures and moves to delayed go with fetch-next off, the next
 * job fetched through the gate. 6.0 through 6.7 share the backend's signatures and the Lua our scripts include.
 */
export const bullmq6: BullmqAdapter = {
  line: 6,
  supportedRange: '>=6.0.0 <7.0.0',
  luaVariant: 'bullmq6',

  workerConstructorArg(gate: Gate): unknown {
    const create = (bullmq as unknown as { createRedisBackend: typeof createRedisBackend }).createRedisBackend;
    return ((queueName, backendOptions, flags) => gateBackend(create(queueName, backendOptions, flags), gate, backendOptions as WorkerOptions)) as typeof createRedisBackend;
  },

  afterConstruct(): void {
    // Done by the factory, while Worker's constructor builds its backend.
  },

  moveToActive(worker: object, token: string): Promise<Job | undefined> {
    const w = worker as { opts: WorkerOptions; moveToActive(token: string, name?: string): Promise<Job | undefined> };
    return w.moveToActive(token, w.opts.name);
  },
};

function gateBackend(backend: RedisQueueBackend, gate: Gate, workerOptions: WorkerOptions): RedisQueueBackend {
  const b = backend as Backend;
  gate.attach(b as unknown as GatedQueue, workerOptions);
  const moveToFailed = b.moveToFailed.bind(b);
  const moveToDelayed = b.moveToDelayed.bind(b);
  b.moveToActive = (token: string, name?: string) => gate.deliver(token, name);
  // 6.x before the blocking-connection watchdog has no reconnectBlocking (nor the hang it works around).
  if (typeof b.reconnectBlocking === 'function') b.reconnectBlocking = settleOnReady(b.reconnectBlocking.bind(b), () => b.blockingClient);
  // Completions go in batches through the installed bullmq's moveToFinished (JobCompleter).
  b.moveToCompleted = ((job, returnValue, removeOnComplete, token, fetchNext) =>
    gate.finishThenFetch(gate.complete(job as never, returnValue, removeOnComplete as never, token), token, fetchNext)) as typeof b.moveToCompleted;
  // Failures are not batched, so no refused-token check covers them: the next fetch goes once the failure
  // is recorded (one more round trip, on failures only), as bullmq fetches only after it succeeded.
  b.moveToFailed = (async (job, failedReason, removeOnFail, token, fetchNext, fieldsToUpdate) => {
    const failed = await moveToFailed(job, failedReason, removeOnFail, token, false, fieldsToUpdate);
    return gate.finishThenFetch(Promise.resolve(failed), token, fetchNext);
  }) as typeof b.moveToFailed;
  b.moveToDelayed = (async (jobId, timestamp, delay, token, opts = {}) =>
    gate.fetchAfterMove(await moveToDelayed(jobId, timestamp, delay, token, { ...opts, fetchNext: false }), token, Boolean(opts.fetchNext))) as typeof b.moveToDelayed;
  return b;
}
