import { encodeSegment } from './keyEncoding';

/**
 * Owns every Redis key name the package writes.
 *
 * Throttle keys live under `<prefix>::throttle:{<name>}`, one hash tag per throttle, so a throttle's own
 * scripts touch one cluster slot. Per-queue scheduler keys live under `<prefix>::queue:{<queue>}`. The
 * `<prefix>::` namespace cannot hold a BullMQ queue's keys, since BullMQ queue names are never empty.
 *
 * The delivery script composes per-class and per-bucket keys inside Lua from `throttlePrefix` and
 * `queueBase` with exactly the layout below (see lua/includes/schedulerKeys.lua); change both together.
 */
export class ThrottleKeys {
  constructor(readonly prefix: string) {}

  /** What every throttle's base starts with; the Lua side appends `{<encoded name>}`. */
  get throttlePrefix(): string {
    return `${this.prefix}::throttle:`;
  }

  throttleBase(name: string): string {
    return `${this.throttlePrefix}{${encodeSegment(name)}}`;
  }

  /** HASH: the sliding-window counter of one limit (by its window) of one bucket. */
  windowCounter(name: string, bucket: string, windowMs: number): string {
    return `${this.throttleBase(name)}:b:${bucket}:${windowMs}`;
  }

  /** ZSET: tokens returned recently, so that a second return of one token is a no-op. */
  returnedTokens(name: string): string {
    return `${this.throttleBase(name)}:returned`;
  }

  /** Statistics kept as deliveries happen (see lua/includes/throttleStats.lua). */
  throttleStats(name: string): { active: string; full: string; waiting: string; stats: string; recent: string } {
    const base = this.throttleBase(name);
    return { active: `${base}:active`, full: `${base}:full`, waiting: `${base}:waiting`, stats: `${base}:stats`, recent: `${base}:recent` };
  }

  /** HASH windowMs -> N: the effective limits of a throttle, merged from every live declaration. */
  effectiveLimits(name: string): string {
    return `${this.throttleBase(name)}:limits`;
  }

  /** HASH workerId -> declaration JSON, and ZSET workerId -> expiry: every live ThrottledWorker's declarations. */
  get registryDeclarations(): string {
    return `${this.prefix}::registry:{declarations}:entries`;
  }

  get registryAlive(): string {
    return `${this.prefix}::registry:{declarations}:alive`;
  }

  /** STRING: a counter that goes up with every change of the registry. */
  get registryVersion(): string {
    return `${this.prefix}::registry:{declarations}:version`;
  }

  queueBase(queue: string): string {
    return `${this.prefix}::queue:{${encodeSegment(queue)}}`;
  }

  /** The keys of one queue's scheduler state. */
  queue(queue: string): QueueThrottleKeys {
    const base = this.queueBase(queue);
    return {
      base,
      readyJobs: `${base}:ready-jobs`,
      readyClasses: `${base}:ready-classes`,
      classState: `${base}:class-state`,
      wakeups: `${base}:wakeups`,
      state: `${base}:state`,
      classes: `${base}:classes`,
      stale: `${base}:stale`,
      intake: `${base}:intake`,
      removedHeld: `${base}:removed-held`,
      blockedSince: `${base}:blocked-since`,
      refusedTokens: `${base}:refused-tokens`,
      classJobs: (member: string) => `${base}:c:${member}`,
      waiters: (bucketId: string) => `${base}:w:${bucketId}`,
    };
  }
}

export interface QueueThrottleKeys {
  readonly base: string;
  /** ZSET "<class>#<job id>" -> order: held jobs of classes not waiting on a full bucket, in queue order. */
  readonly readyJobs: string;
  /** ZSET class -> order of its first job: classes whose own job list may go again (their bucket had room). */
  readonly readyClasses: string;
  /** HASH class -> the bucket id it waits on, for classes waiting on a full bucket. */
  readonly classState: string;
  /** ZSET bucket id -> ms (Redis clock) when that full bucket next has room and its waiters are worth retrying. */
  readonly wakeups: string;
  /** HASH: gen and config (the queue's effective throttles), held (jobs held), fifo/lifo order counters. */
  readonly state: string;
  /** SET of every class with a job list of its own (see classJobs). */
  readonly classes: string;
  /** SET of classes of an older config generation, waiting to be reclassified. */
  readonly stale: string;
  /** ZSET job id -> lease expiry: jobs taken from wait for classification, not yet placed. */
  readonly intake: string;
  /** SET of held job ids removed by someone else and no longer counted as held (see forgetRemovedJobs). */
  readonly removedHeld: string;
  /** ZSET class -> ms (Redis clock) it began to wait on a full bucket. */
  readonly blockedSince: string;
  /** SET of lock tokens whose job's completion Redis refused: the delivery script fetches no next job for them. */
  readonly refusedTokens: string;
  /** ZSET job id -> order: the jobs of one class (the set of buckets they draw from) that met a full bucket. */
  classJobs(member: string): string;
  /** ZSET class -> order: classes waiting for one full bucket. */
  waiters(bucketId: string): string;
}
