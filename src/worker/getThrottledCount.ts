import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { RedisClient } from '../redis/connection';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';

/**
 * The queue-like things getThrottledCount accepts: a bullmq Queue (or Worker) has all of these, its Redis
 * connection as `backend.client` in bullmq 6 and as `client` in bullmq 5.
 */
export interface QueueLike {
  /** The queue's name. */
  readonly name: string;
  /** The queue's options; only `prefix` is read. */
  readonly opts: {
    /**
     * bullmq's key prefix of the queue.
     * @default 'bull'
     */
    prefix?: string;
  };
  /** bullmq's key names of the queue, by type (`events` is read: removals of held jobs are found there). */
  readonly keys: Readonly<Record<string, string>>;
  /** bullmq 6: where the queue keeps its connection. Either this or `client` must be there. */
  readonly backend?: {
    /** Resolves to the queue's ioredis client. */
    readonly client: Promise<unknown>;
  };
  /** bullmq 5: resolves to the queue's ioredis client; read when `backend` is absent. */
  readonly client?: Promise<unknown>;
}

/**
 * How many of a queue's jobs the throttle layer holds (jobs). bullmq's own counts (`queue.getJobCounts()`) do
 * not include them: a held job is in none of bullmq's lists.
 */
export interface ThrottledCount {
  /** Jobs held in their buckets' classes (waiting for room, or about to go). */
  held: number;
  /** Jobs taken from wait and being classified right now. */
  classifying: number;
  /** held + classifying: with queue.getJobCounts(), this accounts for every job of the queue. */
  throttled: number;
}

/**
 * How many of the queue's jobs the throttle layer holds, outside bullmq's own states. 0 once the last
 * ThrottledWorker of the queue has closed (or every declaration lapsed and the jobs were released): held jobs
 * then go back to bullmq's lists (see ThrottleAdmin.releaseHeld).
 */
export async function getThrottledCount(queue: QueueLike): Promise<ThrottledCount> {
  const client = (await (queue.backend?.client ?? queue.client)) as RedisClient;
  const keys = new ThrottleKeys(queue.opts.prefix ?? 'bull').queue(queue.name);
  // Held jobs removed from outside since the workers last looked stop counting first.
  await forgetRemovedJobs(new ScriptRunner(client), queue.keys.events, keys);
  return readThrottledCount(client, keys);
}

/** The counts as they stand in the queue's throttle keys: two reads whatever the number of held jobs. */
export async function readThrottledCount(client: RedisClient, keys: Pick<QueueThrottleKeys, 'state' | 'intake'>): Promise<ThrottledCount> {
  const [held, classifying] = await Promise.all([client.hget(keys.state, 'held'), client.zcard(keys.intake)]);
  const heldCount = Math.max(0, Number(held ?? 0));
  return { held: heldCount, classifying: Number(classifying), throttled: heldCount + Number(classifying) };
}
