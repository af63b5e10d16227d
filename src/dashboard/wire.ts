/**
 * The dashboard's JSON, as the page reads it. Types only, with no imports, so that the page (src/dashboard/web,
 * built for the browser) can use them without pulling in server code; the server checks at compile time that
 * ThrottleAdmin's answers fit them (src/dashboard/server/overviewSource.ts).
 */

export type WireKeyValue = string | number | boolean;

export interface WireLimit {
  windowMs: number;
  max: number;
}

export interface WireQueue {
  queue: string;
  counts: Record<string, number>;
  throttled: number;
  heldByFullBuckets: number;
  classifying: number;
  throttledWorkers: number;
  plainWorkers: number | null;
  oldestHeldMs: number | null;
  /** Fair shares between the queue's groups (the workers' fairness option): its top groups' shares; null without one. */
  fairness: {
    key: string;
    groups: number;
    delivered: number;
    top: { key: WireKeyValue[] | null; delivered: number; share: number; weight: number }[];
  } | null;
  at: number;
}

/** The stats of one throttle as ThrottleAdmin.throttleStats answers them (the server checks they fit). */
export interface WireThrottleStats {
  name: string;
  limits: WireLimit[];
  rate: { n: number; perMs: number; burst: number } | null;
  concurrency: number | null;
  key: string[] | null;
  declaredBy: number;
  queues: string[];
  activeBuckets: number;
  bucketsAtLimit: number;
  waiting: number;
  topBuckets: { key: WireKeyValue[] | null; waiting: number }[];
  lastWindow: { windowMs: number; max: number; delivered: number }[];
  deliveredTotal: number;
  limitedTotal: number;
  tokensExpired: number;
  recoveryHold: { until: number; kind: string } | null;
  limitSource: 'declared' | 'override';
  effective: { perSecond: number; binding: string } | null;
  overrides: { throttle: { limits: WireLimit[]; until: number | null } | null; buckets: number };
  paused: { all?: { until: number | null }; buckets: number } | null;
  /** The adaptive limit (Throttle.adaptive): an unkeyed throttle's live value, or the buckets 429s lowered. */
  adaptive: {
    target: 'rate' | number;
    ceiling: number;
    min: number;
    loweredBuckets: number;
    live: number | null;
    lowered: { key: WireKeyValue[] | null; live: number; loweredAt: number | null }[];
  } | null;
  /** How long the job waiting longest on a full bucket has waited (ms; null: none waits). */
  oldestWaitingMs: number | null;
  /** Waits of delivered jobs: cumulative counts at the histogram's bounds (src/admin/holdTimes.ts), then all of them. */
  holdTimes: { cumulative: readonly number[]; count: number; sumMs: number };
  at: number;
}

/**
 * A throttle or bucket at a glance: 'recovering' (held after a Redis restart or failover), 'paused' (every
 * bucket of it), 'at-limit' (a bucket with no room now), else 'flowing'. The first that applies wins.
 */
export type WireState = 'flowing' | 'at-limit' | 'paused' | 'recovering';

/**
 * Hold-time percentiles of delivered jobs, read off the histogram (src/admin/holdTimes.ts): the bound each
 * falls under, so "at most", never a made-up figure between bounds; their mean from the histogram's sum.
 */
export interface WireHoldPercentiles {
  count: number;
  meanMs: number | null;
  p50: WirePercentile;
  p90: WirePercentile;
  p99: WirePercentile;
}

/** `atMostMs`: the bound the percentile is under; `beyondMs`: past the last bound, which it names; null: no delivery yet. */
export type WirePercentile = { atMostMs: number } | { beyondMs: number } | null;

/** What the dashboard adds to a throttle's stats, from ThrottleAdmin's other reads. */
export interface WireThrottleExtras {
  state: WireState;
  holdPercentiles: WireHoldPercentiles;
  /** The cost each job counts against the limits ('Cost.data("tokens")'), null: 1 per job. */
  cost: string | null;
  /**
   * Units in flight of the busiest bucket the sample read (an unkeyed throttle's one bucket; of a keyed one,
   * the highest among its top waiting buckets; null where none waits): against the concurrency's max.
   */
  inFlight: { counted: number; max: number; key: WireKeyValue[] | null } | null;
}

export type WireThrottle = WireThrottleStats & WireThrottleExtras;

/**
 * The busiest bucket a sample found for one limit: of a keyed throttle, the highest `counted` among its top
 * waiting buckets (at most three, read one by one); of an unkeyed throttle, its one bucket.
 */
export interface WireBusiest {
  windowMs: number;
  /** Deliveries the bucket counts in the window (per-bucket, against `max`). */
  counted: number;
  /** The bucket's N for the window (its own override's, else the throttle's). */
  max: number;
  key: WireKeyValue[] | null;
}

/**
 * One limit's samples, oldest first: times (ms, Redis clock); the busiest bucket's count in the window, against
 * N (`busiest`, null where no bucket waited: unknown without a scan), and its key as JSON text (null there too);
 * the deliveries of all buckets together (`delivered`: for a keyed throttle, not comparable with the per-bucket N);
 * and N then.
 */
export interface WireSeries {
  t: number[];
  busiest: (number | null)[];
  busiestKey: (string | null)[];
  delivered: number[];
  max: number[];
}

/** Per throttle, per limit (by window, in ms) its samples. */
export type WireHistory = Record<string, Record<string, WireSeries>>;

/**
 * One throttle's flow, oldest first: times (ms, Redis clock); deliveries since its keys were created
 * (`deliveredTotal`), and per second over the last few samples (`perSecond`, all buckets; null for the first
 * sample, and after a gap or a reset); the rate's n per second then (null: no rate); the busiest bucket's units
 * in flight, its concurrency max and key as JSON (nulls: no concurrency, or no bucket read).
 */
export interface WireFlowSeries {
  t: number[];
  deliveredTotal: number[];
  perSecond: (number | null)[];
  ratePerSecond: (number | null)[];
  inFlight: (number | null)[];
  inFlightMax: (number | null)[];
  inFlightKey: (string | null)[];
}

/** Per throttle, its flow samples. */
export type WireFlowHistory = Record<string, WireFlowSeries>;

export interface WireOverview {
  at: number;
  /** Whether the POST endpoints (pause, resume, limits, release) are on. */
  writes: boolean;
  queues: WireQueue[];
  throttles: WireThrottle[];
  /** Per throttle, per limit, the busiest bucket found (none for a limit where no bucket of a keyed throttle waits). */
  busiest: Record<string, WireBusiest[]>;
  /** The last read's failure (Redis unreachable, say); the figures are then those of the last read that worked. */
  error?: string;
}

/** What GET api/overview answers: the overview and the history sampled so far. */
export interface WireOverviewWithHistory extends WireOverview {
  history: WireHistory;
  flowHistory: WireFlowHistory;
  /** How often the server samples (ms), and how many samples it keeps per limit. */
  sampleEveryMs: number;
  historySamples: number;
}

export interface WireBucket {
  throttle: string;
  key: WireKeyValue[] | null;
  limits: { windowMs: number; max: number; counted: number; roomAt: number | null }[];
  limitSource: 'declared' | 'override';
  effective: { perSecond: number; binding: string } | null;
  bindingNow: string | null;
  rate: { n: number; perMs: number; burst: number; room: number; roomAt: number | null } | null;
  inFlight: { max: number; counted: number; leased: number } | null;
  paused: { until: number | null } | null;
  /** The bucket's adaptive limit: its live value (already in `limits` or `rate` when lower than declared). */
  adaptive: { target: 'rate' | number; live: number; ceiling: number; min: number; loweredAt: number | null } | null;
  waiting: number;
  /** null while a pause without an end holds the bucket: room returns when it is resumed. */
  nextRoomAt: number | null;
  at: number;
}

/** Jobs of one queue waiting on a bucket: the first ones in queue order, and how many there are. */
export interface WireBucketJobs {
  queue: string;
  ids: string[];
  total: number;
  /** false when more classes wait on the bucket than were read: `total` is then a lower bound. */
  complete: boolean;
}

export interface WireBucketPage {
  bucket: WireBucket;
  /** The bucket at a glance; 'recovering' while its throttle is held after a Redis restart or failover. */
  state: WireState;
  jobs: WireBucketJobs[];
}

export interface WireJob {
  queue: string;
  jobId: string;
  state: string;
  held: 'waiting-on-bucket' | 'ready' | null;
  buckets: (WireBucket & { holdsIt: boolean; cost: number })[];
  roomAt: number | null;
  reason: string;
  at: number;
}

export interface WireError {
  error: string;
  /** The error's class ('InvalidOptionError', 'UnknownThrottleError', ...), for a program to tell them apart. */
  kind: string;
}
