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
  at: number;
}

export interface WireThrottle {
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
  at: number;
}

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
