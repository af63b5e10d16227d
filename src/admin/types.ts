import type { FairShares } from './fairShares';
import type { AdaptiveLimitReading, AdaptiveThrottleReading } from './adaptiveReading';
import { KeyPart, KeyValue } from '../declarations/Key';
import { Limit } from '../declarations/Limit';
import { Missing } from '../declarations/Missing';
import type { RecoveryHold } from '../queueState/recoveryHold';
import type { Rate } from '../declarations/Rate';
import type { RateReading } from './rateReading';
import type { ThrottlePause } from '../queueState/throttlePauses';
import type { LimitOverride } from './limitOverrides';
import type { EffectiveRate } from './effectiveRate';
import { HoldTimes } from './holdTimes';
import type { DispatchDelayStats } from './dispatchDelayStats';

/** A throttle as it applies after combining every live declaration. */
export interface ThrottleSummary {
  /** The throttle's name, as declared with `Throttle.named(name)`. */
  name: string;
  /** Effective limits: every declared limit, the smallest N per window. */
  limits: Limit[];
  /** The effective rate (the lowest declared, with the lowest burst); null when none is declared. */
  rate: Rate | null;
  /** The effective concurrency (the lowest declared): jobs of a bucket in flight at once; null when none is declared. */
  concurrency: number | null;
  /** Key parts, as Key.data('customer') etc.; null for an unkeyed throttle. */
  key: string[] | null;
  /**
   * The key's parts as data (such as `{ kind: 'data', path: 'customer' }`), in the key's order; null for an
   * unkeyed throttle. `key` says the same as text.
   */
  keyParts: KeyPart[] | null;
  /**
   * What the throttle does with a job lacking its key: Missing.SharedBucket when any live declaration says so,
   * else Missing.Unthrottled. An unkeyed throttle ignores it.
   */
  missing: Missing;
  /** Live ThrottledWorkers declaring it (on any queue for throttleStats, on this queue for queueStats). */
  declaredBy: number;
}

/**
 * What ThrottleAdmin.queueStats says of one queue: bullmq's job counts beside the jobs the throttle layer holds,
 * the throttles in effect on it, and its workers. The held figures are read at one moment (`at`), so they add up.
 */
export interface QueueStats {
  /** The queue's name, as asked for. */
  queue: string;
  /** bullmq's own counts (queue.getJobCounts()). */
  counts: Record<string, number>;
  /** Jobs the throttle layer holds: with counts, every job of the queue. */
  throttled: number;
  /** Of those, held because a bucket they draw from has no room. */
  heldByFullBuckets: number;
  /** Being classified right now. */
  classifying: number;
  /** Every throttle in effect on the queue. */
  throttles: ThrottleSummary[];
  /** Live ThrottledWorkers of the queue. */
  throttledWorkers: number;
  /** Worker connections consuming the queue that are not ThrottledWorkers (null where CLIENT LIST is refused). */
  plainWorkers: number | null;
  /**
   * How long the job waiting longest on a full bucket has waited, from the moment it started to (its own, not
   * its class's; ms; null when none waits). A job waits from when a delivery call found its bucket full: bullmq
   * keeps no time at which a delayed or retried job became deliverable.
   */
  oldestHeldMs: number | null;
  /** How its fairness groups shared its deliveries (the workers' `fairness` option); null without one. */
  fairness: FairShares | null;
  /** Redis time of the answer (ms). */
  at: number;
}

/** One bucket of ThrottleStats.topBuckets: its key, and how many jobs wait on it. */
export interface BucketSummary {
  /** The key values (null for the shared bucket of jobs missing the key; [] for an unkeyed throttle). */
  key: KeyValue[] | null;
  /**
   * Jobs waiting on the bucket for room, added up over the queues where it is among their `top` busiest (exact
   * when one queue holds the bucket's jobs, as it usually does).
   */
  waiting: number;
}

export interface ThrottleStats extends ThrottleSummary {
  /** Queues where a live worker declares it. */
  queues: string[];
  /** Buckets counting something now: deliveries still inside a window, a rate's time ahead, or jobs in flight. */
  activeBuckets: number;
  /** Buckets with no room right now. */
  bucketsAtLimit: number;
  /** Jobs held because one of its buckets has no room. */
  waiting: number;
  /** The buckets with the most jobs waiting, most first. */
  topBuckets: BucketSummary[];
  /**
   * Per declared limit: deliveries in the last window (all buckets together), against the limit. An unkeyed
   * throttle's come from its one bucket's counter; a keyed one's from the queues' counts in slots of a sixtieth
   * of the longest window, so they are close to the window, not exact.
   */
  lastWindow: {
    /** The limit's window (ms). */
    windowMs: number;
    /** The declared limit's N for one bucket (an override in force does not change it here). */
    max: number;
    /** Deliveries in the last `windowMs`, every bucket and queue together: for a keyed throttle it can pass `max`. */
    delivered: number;
  }[];
  /** Since the throttle's keys were created. */
  deliveredTotal: number;
  /**
   * Jobs that had to wait because a bucket of the throttle was full, since its keys were created: each job once,
   * when it starts waiting, for the throttle whose bucket held it first (re-checks of a waiting job count nothing).
   */
  limitedTotal: number;
  /**
   * Set while the throttle is held after the Redis node counting it restarted or a replica took over: nothing of
   * it is delivered until `until` (ms, Redis clock). Unthrottled deliveries go on.
   */
  recoveryHold: RecoveryHold | null;
  /** Where the limits in force come from: the live declarations, or an override set at run time (setLimits). */
  limitSource: 'declared' | 'override';
  /** What a bucket can sustain under the limits in force, and which limit sets it; null when it has none. */
  effective: EffectiveRate | null;
  /** Processor start minus processedOn over the live workers (null before any job started), and the leaseMs that covers it. */
  dispatchDelay: DispatchDelayStats | null;
  /** Overrides in force: the whole throttle's (its limits replace `limits`' declared ones), and how many buckets have their own. */
  overrides: {
    /** The whole throttle's override (setLimits without a key); null when none is in force. */
    throttle: LimitOverride | null;
    /** How many buckets have an override of their own in force (setLimits with a key). */
    buckets: number;
  };
  /** Pauses in force (ThrottleAdmin.pause, RetryAfterError): the whole throttle's, and how many buckets are paused on their own. */
  paused: ThrottlePause | null;
  /** Its adaptive limit (`Throttle.adaptive`): the live value, or the buckets 429s lowered; null when it has none. */
  adaptive: AdaptiveThrottleReading | null;
  /** Leased tokens that expired unused, over every queue (0 in exact delivery): steady growth means grants outrun deliveries. */
  tokensExpired: number;
  /** How long the job waiting longest on a full bucket of the throttle has waited, over every queue (ms; null: none waits). */
  oldestWaitingMs: number | null;
  /** How long delivered jobs waited on its full buckets (since its keys were created): a histogram, src/admin/holdTimes.ts. */
  holdTimes: HoldTimes;
  /** Redis time of the answer (ms): the clock of the node holding the throttle namespace, when it was read. */
  at: number;
}

/**
 * What ThrottleAdmin.throttleBucket says of one bucket: what each limit in force counts, its rate, concurrency
 * and pause, the jobs waiting on it, and when room returns. Its counters and pauses are read at one moment
 * (`at`), so they agree: never "full" beside "room now".
 */
export interface BucketStats {
  /** The throttle's name. */
  throttle: string;
  /**
   * The bucket's key values, in the order of the key's parts; [] for an unkeyed throttle's one bucket; null for
   * the shared bucket of jobs missing the key.
   */
  key: KeyValue[] | null;
  /** Per limit in force (see `limitSource`): tokens counted in the window now. */
  limits: {
    /** The limit's window (ms). */
    windowMs: number;
    /** The limit's N: the most tokens in one window (one per delivery, or the job's cost). */
    max: number;
    /** Tokens the window counts now, as the delivery scripts count them. */
    counted: number;
    /** When one more token fits (ms, Redis clock); null when one fits now. */
    roomAt: number | null;
  }[];
  /** Where `limits` come from: the declarations, or an override (the bucket's own, else the throttle's). */
  limitSource: 'declared' | 'override';
  /**
   * The throttle's adaptive limit (`Throttle.adaptive`) in this bucket: its live value, which `limits` (or `rate`)
   * already show in place of the declared one when lower; null when the throttle has none.
   */
  adaptive: AdaptiveLimitReading | null;
  /** What the bucket can sustain under its limits, and which limit sets it. */
  effective: EffectiveRate | null;
  /** The limit that holds the bucket back now ('10 per 1s', 'rate 5 per 1s', 'paused'); null: it has room. */
  bindingNow: string | null;
  /** The bucket's rate, if the throttle has one: what it lets go now, and when room returns. */
  rate: RateReading | null;
  /**
   * The bucket's concurrency, if the throttle has one: jobs counted in flight now, in cost units (a job that ended is counted until its
   * release, or a check within a second, takes it out). `leased`: of those, the units held by workers in leased delivery, for their jobs in
   * flight and for their next ones (given back within about a second of going unused).
   */
  inFlight: {
    /** The throttle's concurrency: the most units (jobs, or cost units with a cost) in flight at once. */
    max: number;
    /** Units counted in flight now (a job that ended counts until its release takes it out). */
    counted: number;
    /** Of `counted`, the units held by workers in leased delivery. */
    leased: number;
  } | null;
  /** The pause on this bucket (its own or the throttle's), until when (ms, Redis clock; null: until resumed); null: none. */
  paused: {
    /** When the pause ends (ms, Redis clock); null: until resumed. */
    until: number | null;
  } | null;
  /** Jobs waiting on this bucket for room, over every queue where the throttle is declared. */
  waiting: number;
  /**
   * When room for one more delivery next frees up (ms, Redis clock); `at` when there is room now; null while a
   * pause without an end holds the bucket (room returns only when it is resumed).
   */
  nextRoomAt: number | null;
  /** Redis time of the read (ms): the clock of the node holding the throttle namespace. */
  at: number;
}
