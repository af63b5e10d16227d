import { KeyValue } from '../declarations/Key';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { assertNamespaceUsable } from '../keys/hashSlotTag';
import { DEFAULT_PREFIX } from '../options/defaults';
import type { RegistryEntry } from '../queueState/registryEntry';
import { PauseOptions } from '../queueState/throttlePauses';
import { AdminConnections } from './adminConnections';
import { AdminContext } from './adminContext';
import { JobExplanation } from './explainJob';
import { explainQueueJob, releaseQueueHeld } from './heldJobs';
import { LimitInput, SetLimitsOptions } from './limitOverrides';
import { LiveRegistry } from './liveRegistry';
import { readQueueStats } from './queueStats';
import { writeFairnessWeight } from './fairnessWeights';
import { clearThrottleLimits, pauseThrottle, resumeThrottle, setThrottleLimits } from './throttleControls';
import { ThrottleAdminOptions } from './throttleAdminOptions';
import { readBucketStats, readThrottleStats } from './throttleStats';
import { BucketStats, QueueStats, ThrottleStats } from './types';

/**
 * Answers why a queue is paced, from what the workers keep as they deliver: no call scans buckets,
 * whatever their number. Read-only, but for dropping held jobs that were removed from outside from the
 * held count (as getThrottledCount does), and for releaseHeld.
 */
export class ThrottleAdmin {
  /**
   * The Redis key names the admin reads, under its `prefix` and throttle namespace (`throttlePrefix`): where to
   * find a throttle's or a queue's keys with redis-cli (docs/keys.md).
   */
  readonly keys: ThrottleKeys;
  private readonly context: AdminContext;

  /**
   * Opens the Redis connections the options describe (with ioredis' maxRetriesPerRequest: null, so a call waits
   * out a reconnect instead of failing); an ioredis client given is used as it is. Reads nothing until asked.
   *
   * @param options - The queues' Redis and prefix, the throttle namespace, and the grantor's Redis if apart.
   * @throws InvalidOptionError when the throttle namespace holds an empty hash tag '{}' before any other, which
   *   would spread its keys over every Redis Cluster slot.
   */
  constructor(options: ThrottleAdminOptions) {
    this.keys = new ThrottleKeys(options.prefix ?? DEFAULT_PREFIX, options.throttlePrefix);
    assertNamespaceUsable('ThrottleAdmin', 'throttlePrefix (by default the prefix)', this.keys.namespace, this.keys.namespaceBase);
    const connections = new AdminConnections(this.keys, options.connection, options.grantor);
    this.context = { keys: this.keys, connections, registry: new LiveRegistry(this.keys, connections) };
  }

  /**
   * Every live ThrottledWorker's declarations (entries whose worker stopped refreshing them are left out).
   *
   * @param nowMs - The time to judge liveness at (ms, Redis clock of the throttle namespace's node); omitted: now.
   */
  async liveEntries(nowMs?: number): Promise<RegistryEntry[]> {
    return this.context.registry.liveEntries(nowMs);
  }

  /**
   * Queues (under this admin's prefix) and throttles with live declarations: what the metrics report on.
   *
   * @returns The queues, and each throttle with the queues that declare it, sorted by name.
   */
  async live(): Promise<{
    /** Queues under this admin's prefix with at least one live ThrottledWorker. */
    queues: string[];
    /** Every throttle a live ThrottledWorker of the throttle namespace declares. */
    throttles: {
      /** The throttle's name, as declared with `Throttle.named(name)`. */
      name: string;
      /** The queues declaring it; a queue under another bullmq prefix is named `<prefix>:<queue>`. */
      queues: string[];
    }[];
  }> {
    return this.context.registry.live();
  }

  /**
   * Why a queue is paced: bullmq's job counts beside the jobs the throttle layer holds (and how many of them wait
   * on a full bucket), the throttles in effect on it, its ThrottledWorkers and plain Workers, and how long the
   * oldest held job has waited. Held jobs removed from outside since the workers last looked are first dropped
   * from the held count.
   *
   * @param queue - The queue's name, under this admin's `prefix`.
   * @returns The queue's figures; the held ones are read at one moment (`at`: ms, Redis clock of the queue's node).
   * @throws UnknownQueueError when Redis holds nothing of the queue under the prefix (no bullmq meta or job id
   *   key, no throttle state) and no live ThrottledWorker serves it; the message suggests close queue names.
   */
  async queueStats(queue: string): Promise<QueueStats> {
    return readQueueStats(this.context, queue);
  }

  /**
   * Throws UnknownThrottleError, naming the declared throttles nearest to `name`, when no live worker declares
   * it: pause and setLimits accept such a name (for workers that declare it later), a CLI asks this first.
   *
   * @param name - The throttle's name.
   * @throws UnknownThrottleError when no live ThrottledWorker declares `name`.
   */
  async requireDeclared(name: string): Promise<void> {
    this.context.registry.mustBeDeclared(name, await this.liveEntries());
  }

  /**
   * What a throttle does over every queue that declares it: the limits in force, buckets active and at their
   * limit, jobs waiting and the busiest buckets, deliveries in the last window and since its keys were created,
   * how long jobs waited, pauses, overrides, a recovery hold, and what a bucket can sustain.
   *
   * @example
   * const stats = await admin.throttleStats('stripe-per-customer', { top: 5 });
   * console.log(stats.bucketsAtLimit, stats.topBuckets); // [{ key: ['acme'], waiting: 120 }, ...]
   * @param name - The throttle's name, as declared with `Throttle.named(name)`.
   * @param options - How many buckets `topBuckets` lists.
   * @returns The throttle's figures; the namespace's read at one moment (`at`: ms, Redis clock).
   * @throws UnknownThrottleError when no live ThrottledWorker declares `name` (the message suggests close names).
   */
  async throttleStats(name: string, options: {
    /**
     * How many buckets `topBuckets` lists: those with the most jobs waiting. 0 lists none.
     * @default 10
     */
    top?: number;
  } = {}): Promise<ThrottleStats> {
    return readThrottleStats(this.context, name, options);
  }

  /**
   * One bucket: `key` holds its key values; null (or omitted) for an unkeyed throttle, or the missing-key bucket.
   *
   * @example
   * const bucket = await admin.throttleBucket('stripe-per-customer', ['acme']);
   * if (bucket.bindingNow) console.log(`held back by ${bucket.bindingNow} until ${bucket.nextRoomAt}`);
   * @param name - The throttle's name, as declared with `Throttle.named(name)`.
   * @param key - The bucket's key values, in the order of the key's parts.
   * @returns The bucket's figures against the limits in force, read at one moment (`at`: ms, Redis clock).
   * @throws UnknownThrottleError when no live ThrottledWorker declares `name`.
   * @throws InvalidGrantError when `key` does not fit the throttle's key: values for an unkeyed throttle, or a
   *   number of values other than the key's parts.
   */
  async throttleBucket(name: string, key: readonly KeyValue[] | null = null): Promise<BucketStats> {
    return readBucketStats(this.context, name, key);
  }

  /**
   * Puts every job the throttle layer holds for `queue` back where bullmq keeps waiting jobs (`wait`, or
   * `prioritized` by its priority), in queue order, data and stored attributes intact, so that plain Workers
   * take them: the way back after the last ThrottledWorker of a queue crashed (one that closes does this
   * itself). Refuses while a live ThrottledWorker declares throttles on the queue (QueueStillThrottledError);
   * one that starts meanwhile stops it, and classifies again what went back. Resolves to how many jobs went back.
   *
   * @param queue - The queue's name, under this admin's `prefix`.
   * @returns How many held jobs went back to bullmq's lists (0 when none was held).
   * @throws QueueStillThrottledError when none went back because a live ThrottledWorker declares throttles on
   *   the queue.
   */
  async releaseHeld(queue: string): Promise<number> {
    return releaseQueueHeld(this.context, queue);
  }

  /**
   * Pauses a throttle (every bucket) or one bucket of it (`key`), for `forMs`, until `untilMs` (Redis clock),
   * or until resumed: its buckets deliver nothing from every worker's next delivery call, other throttles' jobs
   * flow on. The pause is kept in Redis (it outlives worker restarts), shows in throttleStats, and a longer one
   * already set stays. Resolves to when it ends (ms, Redis clock; null: until resumed).
   *
   * @example
   * await admin.pause('stripe', { forMs: 60_000 });
   * @param name - The throttle's name; one that no live worker declares yet is accepted, for workers that declare
   *   it later.
   * @param options - For how long or until when, and which bucket; neither time: until resumed.
   * @returns When the pause in force ends.
   * @throws InvalidOptionError when both `forMs` and `untilMs` are given, `forMs` is not a positive number, or
   *   `untilMs` is not a time after now.
   * @throws InvalidGrantError when `key` does not fit the key of the throttle a live worker declares.
   */
  async pause(name: string, options: PauseOptions = {}): Promise<{
    /** When the pause in force ends (ms, Redis clock; a longer one already set stays); null: until resumed. */
    until: number | null;
  }> {
    return pauseThrottle(this.context, name, options);
  }

  /**
   * Lifts every pause of a throttle, or (`key`) that bucket's own; classes waiting on them look again at once.
   * Resolves to how many pauses were lifted.
   *
   * @example
   * await admin.resume('stripe');                                // every pause of the throttle
   * await admin.resume('stripe-per-customer', { key: ['acme'] }); // only that bucket's own pause
   * @param name - The throttle's name.
   * @param options - Which bucket's own pause to lift.
   * @returns How many stored pauses were removed (a pause already over may count too); 0: there was none.
   * @throws InvalidGrantError when `key` does not fit the key of the throttle a live worker declares.
   */
  async resume(name: string, options: {
    /**
     * One bucket: its key values (null for the missing-key bucket); only its own pause is lifted, not the
     * throttle's. Omitted: every pause of the throttle, its own and its buckets'.
     * @default undefined (every pause)
     */
    key?: readonly KeyValue[] | null;
  } = {}): Promise<number> {
    return resumeThrottle(this.context, name, options);
  }

  /**
   * Replaces the declared window limits of a throttle, or (`key`) of one bucket (a plan tier), until cleared or
   * for `ttlMs`: from the next grant of every worker on, kept in Redis, shown in throttleStats (limitSource) and
   * throttleBucket. Declared windows it leaves out are still counted, so that clearing it finds every delivery
   * counted; a lowered limit holds fully within W + h (the design's Limit changes); under a raised one, jobs
   * waiting on the throttle's buckets look again at once.
   *
   * @example
   * await admin.setLimits('stripe', [{ max: 20, window: '1s' }], { ttlMs: 600_000 }); // lapses after 10 min
   * @param name - The throttle's name; one that no live worker declares yet is accepted, for workers that declare
   *   it later.
   * @param limits - The window limits in force instead of the declared ones: at least one, checked as a
   *   declaration's are. The rate and the concurrency stay as declared.
   * @param options - Which bucket (`key`), and for how long (`ttlMs`).
   * @throws InvalidOptionError when `limits` is empty, or `ttlMs` is not a positive number.
   * @throws InvalidThrottleError when a limit's `max` or `window` is not valid, two limits share a window, or one
   *   limit can never apply beside another.
   * @throws InvalidGrantError when `key` does not fit the key of the throttle a live worker declares.
   */
  async setLimits(name: string, limits: readonly LimitInput[], options: SetLimitsOptions = {}): Promise<void> {
    await setThrottleLimits(this.context, name, limits, options);
  }

  /**
   * Sets the weight of one fairness group of a queue (its workers' `fairness` option) at run time, kept in Redis,
   * before the declared weights: jobs of the group held from now on take turns by it. `null` goes back to the
   * declared weight (or 1).
   *
   * @example
   * await admin.setFairnessWeight('orders', 'acme', 2);
   * @param queue - The queue's name, under this admin's `prefix`.
   * @param group - The group's key value (a one-part fairness key), or its values in order.
   * @param weight - A positive number, or null to clear it.
   * @throws InvalidOptionError when the weight is not a positive number, or a key value is not a string, finite
   *   number or boolean.
   */
  async setFairnessWeight(queue: string, group: KeyValue | readonly KeyValue[], weight: number | null): Promise<void> {
    await writeFairnessWeight(this.context, queue, group, weight);
  }

  /**
   * Goes back to the declared limits: of the whole throttle and every bucket, or (`key`) of one bucket.
   *
   * @example
   * await admin.clearLimits('stripe');                                 // every override of the throttle
   * await admin.clearLimits('stripe-per-customer', { key: ['bigco'] }); // only that bucket's own override
   * @param name - The throttle's name.
   * @param options - Which bucket's own override to clear.
   * @throws InvalidGrantError when `key` does not fit the key of the throttle a live worker declares.
   */
  async clearLimits(name: string, options: {
    /**
     * One bucket: its key values (null for the missing-key bucket); only its own override is cleared. Omitted:
     * every override of the throttle, its own and its buckets'.
     * @default undefined (every override)
     */
    key?: readonly KeyValue[] | null;
  } = {}): Promise<void> {
    await clearThrottleLimits(this.context, name, options);
  }

  /**
   * Why a job is not delivered yet: held waiting on which bucket(s), what each counts against which limit (or
   * that it is paused), and when room returns; or that it is not held (bullmq's own state).
   *
   * @example
   * const { reason } = await admin.explainJob('orders', jobId);
   * // 'waiting: stripe-per-customer [acme] is full (10/10 per 1s); room returns in 420ms; ...'
   * @param queue - The queue's name, under this admin's `prefix`.
   * @param jobId - The job's id.
   * @returns The explanation; `state` 'unknown' when the queue has no such job.
   */
  async explainJob(queue: string, jobId: string): Promise<JobExplanation> {
    return explainQueueJob(this.context, queue, jobId);
  }

  /**
   * Closes the bullmq Queue objects the admin opened and the Redis connections it made; an ioredis client passed
   * in as `connection` (or the grantor's) stays open, for its owner to close.
   */
  async close(): Promise<void> {
    await this.context.connections.close();
  }
}
