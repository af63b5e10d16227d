import type { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import type { QueueStats, ThrottleStats } from '../../admin/types';
import { unlessGone } from '../../admin/unlessGone';
import { throttleState } from '../state';
import type { WireBusiest, WireQueue, WireThrottle, WireThrottleStats } from '../wire';
import { BusiestReading, readBusiest } from './busiestBuckets';
import { holdPercentiles } from './holdPercentiles';
import { readCosts } from './throttleCosts';

/** Top waiting buckets shown per throttle. */
export const TOP_BUCKETS = 10;

export interface OverviewReading {
  at: number;
  queues: WireQueue[];
  throttles: WireThrottle[];
  busiest: Record<string, WireBusiest[]>;
}

// The page's types must stay a view of what ThrottleAdmin answers: these fail to compile if they drift apart.
const asWireThrottleStats = (stats: ThrottleStats): WireThrottleStats => stats;
const asWireQueue = (stats: QueueStats): WireQueue => stats;

function wireThrottle(stats: ThrottleStats, busiest: BusiestReading, cost: string | undefined): WireThrottle {
  return {
    ...asWireThrottleStats(stats),
    state: throttleState(stats),
    holdPercentiles: holdPercentiles(stats.holdTimes),
    cost: cost ?? null,
    inFlight: busiest.inFlight,
  };
}

/**
 * Every live queue (and the listed ones) and every live throttle, through ThrottleAdmin's statistics, and the
 * busiest of each keyed throttle's top waiting buckets (at most BUSIEST_BUCKETS read; an unkeyed throttle's
 * one bucket where it has a concurrency), each throttle's state, hold-time percentiles and cost (one read of
 * the registry): a few commands per queue, per throttle and per bucket read, so its cost does not grow with
 * the number of buckets.
 */
export async function readOverview(admin: ThrottleAdmin, listedQueues: readonly string[] = [], options: { queues?: boolean } = {}): Promise<OverviewReading> {
  const live = await admin.live();
  // queueStats asks CLIENT LIST (plain workers) of each queue: worth it only while someone looks.
  const queueNames = options.queues === false ? [] : [...new Set([...live.queues, ...listedQueues])].sort();
  const [queues, throttles, costs] = await Promise.all([
    Promise.all(queueNames.map((queue) => unlessGone(admin.queueStats(queue)))),
    // The busiest buckets need the top waiting ones throttleStats names: read right after it, beside the queues' reads.
    Promise.all(live.throttles.map((t) => unlessGone(admin.throttleStats(t.name, { top: TOP_BUCKETS })
      .then(async (stats) => ({ stats, busiest: await readBusiest(admin, stats) }))))),
    live.throttles.length > 0 ? readCosts(admin) : new Map<string, string>(),
  ]);
  const wireQueues = queues.filter((q): q is QueueStats => q !== null).map(asWireQueue);
  const liveThrottles = throttles.filter((t): t is { stats: ThrottleStats; busiest: BusiestReading } => t !== null);
  const wireThrottles = liveThrottles.map((t) => wireThrottle(t.stats, t.busiest, costs.get(t.stats.name)));
  const times = [...wireQueues.map((q) => q.at), ...wireThrottles.map((t) => t.at)];
  return {
    at: times.length > 0 ? Math.max(...times) : Date.now(),
    queues: wireQueues,
    throttles: wireThrottles,
    busiest: Object.fromEntries(liveThrottles.map((t) => [t.stats.name, t.busiest.windows])),
  };
}
