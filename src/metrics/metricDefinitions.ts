import { HOLD_BOUNDS_MS, HoldTimes } from '../admin/holdTimes';
import { formatWindow } from '../declarations/window';
import { MetricsSnapshot } from './snapshot';

export type LabelName = 'throttle' | 'queue' | 'window';

export interface Sample {
  labels: Partial<Record<LabelName, string>>;
  value: number;
}

export interface MetricDefinition {
  name: string;
  help: string;
  /** Counters carry totals Redis keeps; each scrape reports them as they are (absolute, not added to). */
  type: 'counter' | 'gauge';
  labelNames: LabelName[];
  samples(snapshot: MetricsSnapshot): Sample[];
}

/** A histogram whose buckets Redis keeps (src/admin/holdTimes.ts): reported as they are, in seconds. */
export interface HistogramDefinition {
  name: string;
  help: string;
  labelNames: LabelName[];
  /** Upper bounds of the buckets, in seconds (the last, +Inf, is implied). */
  bounds: readonly number[];
  samples(snapshot: MetricsSnapshot): { labels: Partial<Record<LabelName, string>>; value: HoldTimes }[];
}

/**
 * Every series is labelled by throttle name, queue and window only: never by a key value, so the number of
 * series stays that of the throttles and queues, whatever the number of buckets.
 * Throttle figures are global (a throttle's buckets are shared by every queue declaring it); queue figures
 * carry `queue`.
 */
export const METRIC_DEFINITIONS: readonly MetricDefinition[] = [
  {
    name: 'bullmq_throttle_jobs_limited_total',
    help: 'Jobs that had to wait because a bucket of the throttle had no room (each job once, when it starts waiting, for the throttle that held it first), since its keys were created.',
    type: 'counter',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.limitedTotal })),
  },
  {
    name: 'bullmq_throttle_jobs_delivered_total',
    help: 'Deliveries counted by the throttle, since its keys were created.',
    type: 'counter',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.deliveredTotal })),
  },
  {
    name: 'bullmq_throttle_tokens_expired_total',
    help: 'Leased tokens that expired unused (leased delivery only); steady growth means grants outrun deliveries.',
    type: 'counter',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.tokensExpired })),
  },
  {
    name: 'bullmq_throttle_recovery_hold_seconds',
    help: 'Seconds until the throttle is delivered again after the Redis node counting it restarted or failed over (0: not held).',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.recoveryHold ? Math.max(0, (t.recoveryHold.until - t.at) / 1000) : 0 })),
  },
  {
    name: 'bullmq_throttle_paused',
    help: 'Whether every bucket of the throttle is paused (ThrottleAdmin.pause, the CLI, a RetryAfterError without a key): 1 or 0.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.paused?.all ? 1 : 0 })),
  },
  {
    name: 'bullmq_throttle_paused_buckets',
    help: 'Buckets of the throttle paused on their own (a key\'s pause, a RetryAfterError of one bucket).',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.paused?.buckets ?? 0 })),
  },
  {
    name: 'bullmq_throttle_adaptive_limit',
    help: 'The live value of the throttle\'s adaptive limit (a window\'s N, or a rate\'s n), which 429s lower and time raises back to its ceiling; unkeyed adaptive throttles only (keyed: bullmq_throttle_adaptive_lowered_buckets).',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.filter((t) => t.adaptive?.live != null).map((t) => ({ labels: { throttle: t.name }, value: t.adaptive!.live! })),
  },
  {
    name: 'bullmq_throttle_adaptive_lowered_buckets',
    help: 'Buckets of the throttle whose adaptive limit 429s lowered, not yet raised back to its ceiling (adaptive throttles only).',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.filter((t) => t.adaptive).map((t) => ({ labels: { throttle: t.name }, value: t.adaptive!.loweredBuckets })),
  },
  {
    name: 'bullmq_throttle_oldest_waiting_seconds',
    help: 'How long the job waiting longest on a full bucket of the throttle has waited, from when it started to, over every queue (0 when none waits).',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: (t.oldestWaitingMs ?? 0) / 1000 })),
  },
  {
    name: 'bullmq_throttle_active_buckets',
    help: 'Buckets of the throttle counting something now: deliveries inside a window, a rate not yet refilled, or jobs in flight.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.activeBuckets })),
  },
  {
    name: 'bullmq_throttle_buckets_at_limit',
    help: 'Buckets of the throttle with no room right now.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.bucketsAtLimit })),
  },
  {
    name: 'bullmq_throttle_waiting_jobs',
    help: 'Jobs held because a bucket of the throttle has no room.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.waiting })),
  },
  {
    name: 'bullmq_throttle_effective_limit_jobs',
    help: 'N of each effective limit of the throttle (at most N deliveries per bucket in any window of this length).',
    type: 'gauge',
    labelNames: ['throttle', 'window'],
    samples: (s) => s.throttles.flatMap((t) => t.limits.map((l) => ({ labels: { throttle: t.name, window: formatWindow(l.windowMs) }, value: l.max }))),
  },
  {
    name: 'bullmq_throttle_effective_rate_per_second',
    help: 'The throttle\'s rate per bucket, in deliveries per second on average (rate(n, per): n / per), when it declares one.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.flatMap((t) => (t.rate ? [{ labels: { throttle: t.name }, value: (t.rate.n * 1000) / t.rate.perMs }] : [])),
  },
  {
    name: 'bullmq_throttle_effective_burst_jobs',
    help: 'The throttle\'s burst per bucket: the most deliveries its rate lets go at once.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.flatMap((t) => (t.rate ? [{ labels: { throttle: t.name }, value: t.rate.burst }] : [])),
  },
  {
    name: 'bullmq_throttle_effective_concurrency_jobs',
    help: 'The throttle\'s concurrency per bucket: the most of its jobs in flight at once, when it declares one.',
    type: 'gauge',
    labelNames: ['throttle'],
    samples: (s) => s.throttles.flatMap((t) => (t.concurrency !== null && t.concurrency !== undefined ? [{ labels: { throttle: t.name }, value: t.concurrency }] : [])),
  },
  {
    name: 'bullmq_throttle_window_delivered_jobs',
    help: 'Deliveries of the throttle (all buckets together) in the last window of each limit.',
    type: 'gauge',
    labelNames: ['throttle', 'window'],
    samples: (s) => s.throttles.flatMap((t) => t.lastWindow.map((w) => ({ labels: { throttle: t.name, window: formatWindow(w.windowMs) }, value: w.delivered }))),
  },
  {
    name: 'bullmq_throttle_queue_held_jobs',
    help: 'Jobs of the queue the throttle layer holds (with bullmq\'s own counts, every job of the queue).',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.map((q) => ({ labels: { queue: q.queue }, value: q.throttled })),
  },
  {
    name: 'bullmq_throttle_queue_waiting_jobs',
    help: 'Held jobs of the queue that wait because a bucket they draw from has no room.',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.map((q) => ({ labels: { queue: q.queue }, value: q.heldByFullBuckets })),
  },
  {
    name: 'bullmq_throttle_queue_oldest_waiting_seconds',
    help: 'How long the job of the queue waiting longest on a full bucket has waited, from when it started to (0 when none waits).',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.map((q) => ({ labels: { queue: q.queue }, value: (q.oldestHeldMs ?? 0) / 1000 })),
  },
  {
    name: 'bullmq_throttle_queue_fair_groups',
    help: 'Fairness groups of the queue that had deliveries counted (the workers\' fairness option; absent without one). Each group\'s share is in queueStats, never a label.',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.filter((q) => q.fairness).map((q) => ({ labels: { queue: q.queue }, value: q.fairness!.groups })),
  },
  {
    name: 'bullmq_throttle_queue_fair_top_share',
    help: 'The largest share of the queue\'s deliveries (cost units) one fairness group had, 0 to 1: against the weights, how far the busiest tenant is ahead.',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.filter((q) => q.fairness).map((q) => ({ labels: { queue: q.queue }, value: q.fairness!.top[0]?.share ?? 0 })),
  },
  {
    name: 'bullmq_throttle_declaring_workers',
    help: 'Live ThrottledWorkers of the queue declaring the throttle.',
    type: 'gauge',
    labelNames: ['queue', 'throttle'],
    samples: (s) => s.queues.flatMap((q) => q.throttles.map((t) => ({ labels: { queue: q.queue, throttle: t.name }, value: t.declaredBy }))),
  },
  {
    name: 'bullmq_throttle_queue_plain_workers',
    help: 'Connections consuming the queue that are not ThrottledWorkers (they bypass the throttles); absent where CLIENT LIST is refused.',
    type: 'gauge',
    labelNames: ['queue'],
    samples: (s) => s.queues.filter((q) => q.plainWorkers !== null).map((q) => ({ labels: { queue: q.queue }, value: q.plainWorkers as number })),
  },
];

/** How long delivered jobs waited on the throttle's full buckets: every delivery, one that never waited at 0. */
export const HOLD_TIME_HISTOGRAM: HistogramDefinition = {
  name: 'bullmq_throttle_hold_seconds',
  help: 'How long the throttle\'s delivered jobs waited on its full buckets, from when each started to wait until its delivery (a job that never waited counts at 0), since its keys were created.',
  labelNames: ['throttle'],
  bounds: HOLD_BOUNDS_MS.map((ms) => ms / 1000),
  samples: (s) => s.throttles.map((t) => ({ labels: { throttle: t.name }, value: t.holdTimes })),
};

/** 1 when the last scrape read Redis, 0 when it failed or timed out (and the other metrics were left empty). */
export const COLLECT_SUCCESS_METRIC = 'bullmq_throttle_metrics_collect_success';
