import { DEFAULT_PREFIX } from '../options/defaults';
import { encodeSegment } from './keyEncoding';

/**
 * Owns every Redis key name the package writes.
 *
 * Two kinds of keys, in two places, so that every script touches one Redis Cluster slot:
 * - A throttle namespace (`throttlePrefix`, by default the bullmq prefix) keeps every throttle's counters,
 *   limits and the declaration registry under `<throttlePrefix>::throttle:{<encoded throttlePrefix>}`.
 *   The namespace is one slot (the grantor's): the throttlePrefix's own hash tag when it has one (so
 *   `{bull}` shares the slot of bullmq's `{bull}:...` keys), else the encoded throttlePrefix in braces.
 *   A delivery drawing from several throttles is therefore counted in one script.
 * - Each queue's scheduler keys live under `<prefix>:<queue>::throttle`, beside bullmq's own
 *   `<prefix>:<queue>:...`, so they hash exactly as the queue's keys do (a `{bull}` prefix or a `{orders}`
 *   queue name). bullmq refuses ':' in queue names and job ids of fewer than three ':'-parts, so no
 *   job key can be one of them unless a custom job id starts ':throttle:'.
 *
 * The delivery script composes per-class and per-bucket keys inside Lua from `throttlePrefix` and
 * `queueBase` with exactly the layout below (see lua/includes/schedulerKeys.lua); change both together.
 */
export class ThrottleKeys {
  /** The throttle namespace. */
  readonly namespace: string;

  constructor(
    /** bullmq's key prefix of the queues these keys are for. */
    readonly prefix: string = DEFAULT_PREFIX,
    namespace?: string,
  ) {
    this.namespace = namespace ?? prefix;
  }

  /** Every key of the namespace starts with this: one hash slot for all of them. */
  get namespaceBase(): string {
    return `${this.namespace}::throttle:{${encodeSegment(this.namespace)}}`;
  }

  /** What every throttle's base starts with; the Lua side appends the encoded name. */
  get throttlePrefix(): string {
    return `${this.namespaceBase}:`;
  }

  /**
   * The base of every key of one throttle in the namespace: `throttlePrefix` and the encoded throttle name. Each
   * of the throttle's keys (counters, limits, pauses, overrides) is this and a suffix.
   * @param name The throttle's name, as declared with `Throttle.named(name)`.
   * @returns The key base, such as `bull::throttle:{bull}:stripe`.
   */
  throttleBase(name: string): string {
    return `${this.throttlePrefix}${encodeSegment(name)}`;
  }

  /** HASH: the sliding-window counter of one limit (by its window) of one bucket. */
  windowCounter(name: string, bucket: string, windowMs: number): string {
    return `${this.throttleBase(name)}:b:${bucket}:${windowMs}`;
  }

  /** STRING: the theoretical arrival time (us) of one bucket's rate (lua/includes/rateCounter.lua). */
  rateCounter(name: string, bucket: string): string {
    return `${this.throttleBase(name)}:b:${bucket}:r`;
  }

  /**
   * STRING "<live>|<since ms>": the live value of the throttle's adaptive limit in one bucket, while lowered
   * (lua/includes/adaptiveLimit.lua, which composes the same name).
   */
  adaptiveLimit(name: string, bucket: string): string {
    return `${this.throttleBase(name)}:b:${bucket}:a`;
  }

  /**
   * ZSET bucket segment -> when (ms) its adaptive limit is back at its ceiling: the throttle's buckets lowered by
   * 429s (lua/includes/adaptiveLimit.lua).
   */
  adaptedBuckets(name: string): string {
    return `${this.throttleBase(name)}:adapted`;
  }

  /**
   * STRING: the latest moment (us) a delivery told a caller waiting for the bucket's window room to look again
   * (lua/includes/wakeClaims.lua, which composes the same name).
   */
  wakeClaim(name: string, bucket: string): string {
    return `${this.throttleBase(name)}:b:${bucket}:wk`;
  }

  /**
   * HASH '#' -> the jobs' costs summed, an entry per job in flight -> its cost: one bucket's concurrency
   * (lua/includes/inFlightCounter.lua); 'a' and 'f' mark it in the throttle's indexes (lua/includes/bucketIndexes.lua);
   * its `:q` names the queues waiting on it.
   */
  inFlightCounter(name: string, bucket: string): string {
    return `${this.throttleBase(name)}:b:${bucket}:c`;
  }

  /** HASH '*' or a bucket segment -> until (ms; 0: until resumed): the throttle's pauses (lua/includes/throttlePauses.lua). */
  throttlePauses(name: string): string {
    return `${this.throttleBase(name)}:paused`;
  }

  /** HASH '*' or a bucket segment -> "<until ms>|W:N,...": limits set at run time (lua/includes/limitOverrides.lua). */
  limitOverrides(name: string): string {
    return `${this.throttleBase(name)}:overrides`;
  }

  /** ZSET: tokens returned recently, so that a second return of one token is a no-op. */
  returnedTokens(name: string): string {
    return `${this.throttleBase(name)}:returned`;
  }

  /** Bucket indexes kept with the counters of every kind (see lua/includes/bucketIndexes.lua). */
  throttleIndexes(name: string): {
    /** ZSET bucket segment -> ms until which the bucket counts something (docs/keys.md, Bucket indexes). */
    active: string;
    /** ZSET bucket segment -> the earliest ms at which room returns to the bucket, while it is at its limit. */
    full: string;
  } {
    const base = this.throttleBase(name);
    return { active: `${base}:active`, full: `${base}:full` };
  }

  /** HASH windowMs -> N (and r, rh: its rate): the effective limits of a throttle, merged from every live declaration. */
  effectiveLimits(name: string): string {
    return `${this.throttleBase(name)}:limits`;
  }

  /** HASH workerId -> declaration JSON, and ZSET workerId -> expiry: every live ThrottledWorker's declarations. */
  get registryDeclarations(): string {
    return `${this.namespaceBase}::registry:entries`;
  }

  /** ZSET workerId -> ms its registry entry lapses: the live ThrottledWorkers of the namespace. */
  get registryAlive(): string {
    return `${this.namespaceBase}::registry:alive`;
  }

  /**
   * HASH id, since, holdFrom, hold, holdMs: the identity of the Redis node that counts the namespace's
   * throttles, and the hold its restart or promotion began (lua/includes/nodeIdentity.lua, recoveryHold.lua).
   */
  get grantorRecord(): string {
    return `${this.namespaceBase}::grantor`;
  }

  /** HASH encoded throttle name -> until when (ms) its own recovery hold lasts (lua/includes/recoveryHold.lua). */
  get grantorHolds(): string {
    return `${this.grantorRecord}:holds`;
  }

  /** STRING: a counter that goes up with every change of the registry. */
  get registryVersion(): string {
    return `${this.namespaceBase}::registry:version`;
  }

  /**
   * LIST of JSON entries, oldest first: the dashboard's samples of the namespace's throttles (its charts'
   * history), so that a dashboard restarted shows what was sampled before (src/dashboard/server/historyStore.ts).
   * Capped to the dashboard's historySamples by LTRIM on every write; lapses when no dashboard samples.
   */
  get dashboardHistory(): string {
    return `${this.namespaceBase}::dashboard:history`;
  }

  /**
   * ZSET namespace -> lapse ms: the namespaces where a throttle name is declared, across the deployment
   * (outside every namespace, so that two namespaces see each other; one slot per name).
   */
  static namespacesOf(name: string): string {
    return `bullmq-throttle::namespaces:{${encodeSegment(name)}}`;
  }

  /** The queue's own bullmq key prefix ("bull:orders:"), as bullmq's QueueKeys spell it. */
  bullmqBase(queue: string): string {
    return `${this.prefix}:${queue}:`;
  }

  /**
   * The base of every key this package keeps for one queue: `<prefix>:<queue>::throttle`. It hashes as the
   * queue's own bullmq keys do, so those keys are in the queue's Redis Cluster slot.
   * @param queue The queue's name, as given to bullmq's Queue and Worker.
   * @returns The key base, such as `bull:orders::throttle`.
   */
  queueBase(queue: string): string {
    return `${this.prefix}:${queue}::throttle`;
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
      workers: `${base}:workers`,
      classes: `${base}:classes`,
      stale: `${base}:stale`,
      intake: `${base}:intake`,
      removedHeld: `${base}:removed-held`,
      blockedSince: `${base}:blocked-since`,
      refusedTokens: `${base}:refused-tokens`,
      node: `${base}:node`,
      leaseRoom: `${base}:lease-room`,
      dispatchDelays: `${base}:dispatch-delay`,
      inFlight: `${base}:in-flight`,
      putBack: `${base}:put-back`,
      deadlines: `${base}:deadlines`,
      deadlineWhy: `${base}:deadline-why`,
      fairFinish: `${base}:fair-finish`,
      fairWeights: `${base}:fair-weights`,
      fairDelivered: `${base}:fair-delivered`,
      bullmqJob: (jobId: string) => `${this.bullmqBase(queue)}${jobId}`,
      leasedPause: (bucketId: string) => `${base}:lpaused:${bucketId}`,
      classJobs: (member: string) => `${base}:c:${member}`,
      waiters: (bucketId: string) => `${base}:w:${bucketId}`,
      throttleStats: (name: string) => {
        const stats = `${base}:t:${encodeSegment(name)}`;
        return { waiting: `${stats}:waiting`, stats: `${stats}:stats`, recent: `${stats}:recent`, held: `${stats}:held` };
      },
    };
  }
}

/** Statistics one queue keeps of one throttle as it holds and delivers (see lua/includes/throttleStatsNotes.lua). */
export interface QueueThrottleStatsKeys {
  /** ZSET bucket -> jobs of this queue held because that bucket is full. */
  readonly waiting: string;
  /**
   * HASH delivered, limited (totals since the keys exist), waiting (the sum of :waiting), and the waits of the
   * jobs delivered after waiting (heldCount, heldSumMs, held:<i>: src/admin/holdTimes.ts).
   */
  readonly stats: string;
  /** HASH slot of W/60 of the longest window -> deliveries in it. */
  readonly recent: string;
  /** ZSET "<class>#<job id>" -> ms the job started waiting on a full bucket of the throttle (the first that held it). */
  readonly held: string;
}

/** The keys of one queue's throttle layer (ThrottleKeys.queue; docs/keys.md describes each). */
export interface QueueThrottleKeys {
  /** What every key below starts with: `<prefix>:<queue>::throttle`. */
  readonly base: string;
  /** ZSET "<class>#<job id>" -> order: held jobs of classes not waiting on a full bucket, in queue order. */
  readonly readyJobs: string;
  /** ZSET "<class>#<job id>" -> the ms by which a held job must have left its class (Throttle.maxWait: lua/includes/deadlines.lua). */
  readonly deadlines: string;
  /** HASH "<class>#<job id>" -> "<throttle>|<bucket>|<estimate ms>": deadlines an estimate brought to now. */
  readonly deadlineWhy: string;
  /** HASH group -> its latest finish tag (the fairness option: lua/includes/fairness.lua). */
  readonly fairFinish: string;
  /** HASH group -> weight set at run time (ThrottleAdmin.setFairnessWeight), before the declared ones. */
  readonly fairWeights: string;
  /** ZSET group -> cost units delivered (queueStats().fairness; its sum is the state's field fd). */
  readonly fairDelivered: string;
  /** ZSET class -> order of its first job: classes whose own job list may go again (their bucket had room). */
  readonly readyClasses: string;
  /** HASH class -> the bucket id it waits on, for classes waiting on a full bucket. */
  readonly classState: string;
  /** ZSET bucket id -> ms (Redis clock) when that full bucket next has room and its waiters are worth retrying. */
  readonly wakeups: string;
  /** HASH: gen and config (the queue's effective throttles), held (jobs held), fifo/lifo order counters. */
  readonly state: string;
  /** ZSET worker id -> ms (this queue's Redis clock) its declarations lapse: the live ThrottledWorkers of the queue. */
  readonly workers: string;
  /** SET of every class with a job list of its own (see classJobs). */
  readonly classes: string;
  /** SET of classes of an older config generation, waiting to be reclassified. */
  readonly stale: string;
  /** ZSET job id -> lease expiry: jobs taken from wait for classification, not yet placed. */
  readonly intake: string;
  /** SET of held job ids removed by someone else and no longer counted as held (see forgetRemovedJobs). */
  readonly removedHeld: string;
  /**
   * ZSET class -> ms (Redis clock) it began to wait on a full bucket: no longer written (the oldest waiting job's
   * age comes from each throttle's :held); the scripts that release held jobs still clear what older versions left.
   */
  readonly blockedSince: string;
  /** SET of lock tokens whose job's completion Redis refused: the delivery script fetches no next job for them. */
  readonly refusedTokens: string;
  /** HASH bucket id -> us when the grantor said the bucket has room again (leased delivery, lua/includes/leasedRoom.lua). */
  readonly leaseRoom: string;
  /** HASH job id -> the concurrency counters it is counted in (lua/includes/inFlightCounter.lua), until it ends. */
  readonly inFlight: string;
  /**
   * SET of job ids their worker put back (a processor that would have started too late): each goes first among
   * its priority again when it comes from wait, as bullmq places a job its processor rate-limited
   * (lua/markPutBack-2.lua).
   */
  readonly putBack: string;
  /** bullmq's HASH of one job of the queue (`<prefix>:<queue>:<id>`): in the queue's slot, as every key here. */
  bullmqJob(jobId: string): string;
  /**
   * STRING, leased delivery: a bucket a RetryAfterError of this queue paused, expiring when the pause ends, so that
   * the queue's pool of the bucket is not spent meanwhile (lua/includes/leasedRoom.lua; the pause itself is in the
   * namespace's slot). `bucketId` is "<encoded throttle name>=<bucket segment>".
   */
  leasedPause(bucketId: string): string;
  /** HASH worker id -> "p50 p99 samples at": each live worker's dispatch delay (src/worker/completion/dispatchDelay.ts). */
  readonly dispatchDelays: string;
  /**
   * HASH describing the node that holds the queue: id, since (leased delivery: lua/takeLeasedJobs-19.lua);
   * replicas, noReplicasSince (lua/nodeReplicas-1.lua). Its `:mark` is the identity check's mark.
   */
  readonly node: string;
  /** ZSET job id -> order: the jobs of one class (the set of buckets they draw from) that met a full bucket. */
  classJobs(member: string): string;
  /** ZSET class -> order: classes waiting for one full bucket. */
  waiters(bucketId: string): string;
  /** What this queue keeps of one throttle's statistics. */
  throttleStats(name: string): QueueThrottleStatsKeys;
}
