import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { JobExplanation } from '../admin/explainJob';
import { assertNamespaceUsable } from '../keys/hashSlotTag';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { DEFAULT_PREFIX } from '../options/defaults';
import { closeClient, ConnectionInput, IORedisClient, openClient, OwnedClient, RedisClient } from '../redis/connection';
import { countHeldJobs } from './heldJobCount';
import { HeldJobRef, HeldPlace, readHeldJobs } from './heldJobs';

/** The bullmq Queue members this needs: its name, prefix and Redis client (bullmq 6: `backend.client`; 5: `client`). */
export interface QueueOfBoard {
  readonly name: string;
  readonly opts: { prefix?: string };
  readonly backend?: { readonly client: Promise<unknown> };
  readonly client?: Promise<unknown>;
}

/**
 * Where the held jobs of a queue shown in Bull Board are read.
 *
 * @example
 * ```ts
 * // The workers set throttlePrefix: 'payments', and the queue's own client is not the Redis to read.
 * new ThrottledBullMQAdapter(paymentsQueue, { throttlePrefix: 'payments', connection: 'redis://queues:6379' });
 * ```
 */
export interface ThrottledQueueViewOptions {
  /** The throttle namespace: the workers' `throttlePrefix`. @default the queue's prefix */
  throttlePrefix?: string;
  /** The Redis holding the queue, when not the queue's own client. @default the queue's client */
  connection?: ConnectionInput;
}

/**
 * What the throttle layer holds of one queue, read from its per-queue keys (through ThrottleKeys) on the queue's
 * Redis: how many jobs, a page of them, and where one job is held.
 */
export class ThrottledQueueView {
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  private readonly eventsKey: string;
  private connection?: Promise<OwnedClient>;
  private runner?: ScriptRunner;
  private admin?: Promise<ThrottleAdmin>;

  constructor(private readonly queue: QueueOfBoard, private readonly options: ThrottledQueueViewOptions = {}) {
    this.keys = new ThrottleKeys(queue.opts.prefix ?? DEFAULT_PREFIX, options.throttlePrefix);
    assertNamespaceUsable('ThrottledBullMQAdapter', 'throttlePrefix (by default the queue\'s prefix)', this.keys.namespace, this.keys.namespaceBase);
    this.queueKeys = this.keys.queue(queue.name);
    this.eventsKey = `${this.keys.bullmqBase(queue.name)}events`;
  }

  private owned(): Promise<OwnedClient> {
    this.connection ??= this.options.connection !== undefined
      ? Promise.resolve(openClient(this.options.connection, { maxRetriesPerRequest: null }))
      // The queue's own client, which stays the app's to close.
      : Promise.resolve(this.queue.backend?.client ?? this.queue.client).then((client) => {
        if (!client) {
          throw new InvalidOptionError(`ThrottledBullMQAdapter: queue '${this.queue.name}' has no Redis client (connection: undefined), so its held jobs cannot be read: `
            + 'give the adapter `connection` (the Redis holding the queue), or a queue on a Redis backend.');
        }
        return { client: client as RedisClient, owned: false };
      });
    return this.connection;
  }

  private async client(): Promise<RedisClient> {
    return (await this.owned()).client;
  }

  /** Held jobs, intake included: what the adapter adds to bullmq's waiting count. */
  async count(): Promise<number> {
    const client = await this.client();
    this.runner ??= new ScriptRunner(client);
    return countHeldJobs(client, this.runner, this.queueKeys, this.eventsKey);
  }

  /** Held jobs at positions start..end (end -1: to the last), in the order readHeldJobs walks them. */
  async page(start: number, end: number): Promise<HeldJobRef[]> {
    return readHeldJobs(await this.client(), this.queueKeys, start, end);
  }

  /**
   * Where one job is held, or null when the throttle layer does not hold it. A job in intake is found by its id; a
   * classified one as ThrottleAdmin.explainJob finds it (classified again from the live workers' declarations).
   */
  async place(jobId: string): Promise<{ place: HeldPlace; explanation: JobExplanation | null } | null> {
    const client = await this.client();
    if ((await client.zscore(this.queueKeys.intake, jobId)) !== null) return { place: { kind: 'classifying' }, explanation: null };
    const explanation = await (await this.throttleAdmin()).explainJob(this.queue.name, jobId);
    if (explanation.held === null) return null;
    const holding = explanation.buckets.find((bucket) => bucket.holdsIt);
    const place: HeldPlace = explanation.held === 'waiting-on-bucket' && holding
      ? { kind: 'waiting', throttle: holding.throttle, key: holding.key }
      : { kind: 'ready' };
    return { place, explanation };
  }

  private throttleAdmin(): Promise<ThrottleAdmin> {
    this.admin ??= this.client().then((client) => new ThrottleAdmin({
      connection: client as unknown as IORedisClient, prefix: this.keys.prefix, throttlePrefix: this.options.throttlePrefix,
    }));
    return this.admin;
  }

  /** Closes what this view opened: the admin's queue handle, and the connection when `connection` was given. */
  async close(): Promise<void> {
    if (this.admin) await (await this.admin).close();
    if (this.connection) await closeClient(await this.connection);
  }
}
