import { Job } from 'bullmq';
import { Throttle } from '../../src/declarations/Throttle';
import { BenchCluster, spreadLayout } from '../support/benchCluster';
import { ClientCalls } from '../support/clientCalls';
import { rateStats } from '../support/rates';
import { round } from '../support/summary';
import type { Row } from '../types';
import { ClusterRig } from './clusterRig';
import { waitWithProgress } from './progress';
import { CONCURRENCY } from './throughputPart';

/** Limits that bind across the three queues, and the leases tried with each. */
export const SUSTAINED_LIMITS = [
  { max: 500, windowMs: 1000 },
  { max: 100, windowMs: 100 },
];
export const LEASES_MS = [100, 20];
/** The rule-2 target of the tests: sustained ≥ 97% of N/(W + h). */
const SUSTAINED_TARGET = 0.97;

export interface TokenCount {
  granted: number;
  expired: number;
  returned: number;
  delivered: number;
}

export interface SustainedOutcome {
  rows: Row[];
  tokens: { label: string; count: TokenCount }[];
  notes: string[];
}

/**
 * Part 2: a backlog on three queues on three masters held to one throttle of N per W shared by them, in
 * leased delivery with lease h; every delivery's processedOn (the queue node's Redis clock: every node runs
 * on this machine, so one clock) gives the most in any window of W and the sustained rate.
 */
export async function sustainedPart(bench: BenchCluster, calls: ClientCalls, spanMs: number, log: (m: string) => void): Promise<SustainedOutcome> {
  const rows: Row[] = [];
  const tokens: SustainedOutcome['tokens'] = [];
  for (const limit of SUSTAINED_LIMITS) {
    for (const leaseMs of LEASES_MS) {
      const ceiling = (limit.max * 1000) / (limit.windowMs + leaseMs);
      // Enough jobs for about spanMs at the ceiling, and at least 6 windows' worth.
      const perQueue = Math.ceil(Math.max((ceiling * spanMs) / 1000, 6 * limit.max) / 3);
      const label = `${limit.max} per ${limit.windowMs} ms, h ${leaseMs} ms`;
      const rig = new ClusterRig(bench, spreadLayout(bench, `bench-cl-sus-${limit.max}-${limit.windowMs}-${leaseMs}`, 'q'));
      try {
        await rig.addBacklog(perQueue, (q, i) => ({ q, i }));
        const times: number[] = [];
        const perQueueDone = [0, 0, 0];
        calls.reset();
        const throttle = Throttle.named('shared').limit(limit.max, limit.windowMs);
        rig.startWorkers({ kind: 'throttled', concurrency: CONCURRENCY, throttles: [throttle], leaseMs }, async (job: Job, q: number) => {
          times.push(job.processedOn!);
          perQueueDone[q]++;
        });
        const total = perQueue * 3;
        await waitWithProgress(() => times.length, total, () => rig.errors.length > 0, 4 * ((total / ceiling) * 1000) + 30_000, label);
        rig.assertModes('leased delivery', label);
        rig.assertNoErrors(label);
        const stats = rateStats(times, limit.max, limit.windowMs);
        const throttleStats = await rig.throttleAdmin().throttleStats('shared');
        await rig.closeWorkers();
        const count: TokenCount = { granted: calls.grantedOf('shared'), expired: throttleStats.tokensExpired, returned: calls.returnedOf('shared'), delivered: throttleStats.deliveredTotal };
        tokens.push({ label: `binding, ${label}`, count });
        const fraction = stats.sustainedPerSecond / ceiling;
        log(`  ${label}: most in any W ${stats.mostInWindow}, sustained ${stats.sustainedPerSecond.toFixed(1)}/s = ${(100 * fraction).toFixed(1)}% of N/(W+h) ${ceiling.toFixed(1)}/s `
          + `(${(100 * stats.sustainedPerSecond / (limit.max * 1000 / limit.windowMs)).toFixed(1)}% of N/W); per queue ${perQueueDone.join('/')}; `
          + `lease calls ${calls.scripts.get('leaseTokens') ?? 0}, tokens asked ${Math.round(calls.askedOf('shared'))}, granted ${count.granted}, expired ${count.expired}, returned ${Math.round(count.returned)}`);
        rows.push({
          part: '2 sustained', measure: 'sustained / N/(W+h)', case: `leased, ${label}`, value: round(fraction, 3), unit: '×',
          pass: fraction >= SUSTAINED_TARGET && stats.mostInWindow <= limit.max,
          detail: `${stats.sustainedPerSecond.toFixed(1)}/s of ${ceiling.toFixed(1)}/s; most in any W ${stats.mostInWindow} (N ${limit.max}); ${total} jobs over ${(stats.spanMs / 1000).toFixed(1)} s`,
          mostInWindow: stats.mostInWindow, max: limit.max, windowMs: limit.windowMs, leaseMs, sustainedPerSecond: round(stats.sustainedPerSecond, 1), ceilingPerSecond: round(ceiling, 1),
          overallPerSecond: round(stats.overallPerSecond, 1), jobs: total,
        });
      } finally {
        await rig.close();
      }
    }
  }
  return {
    rows, tokens,
    notes: [
      `Part 2: one unkeyed throttle 'shared' of N per W declared by three ThrottledWorkers (concurrency ${CONCURRENCY}), one per queue {qN} on three masters, leased`,
      '  with leaseMs h; a backlog of about max(6 W, the span at N/(W+h)) jobs, added before the workers start. sustained = N / mean(t[i+N] - t[i]) over the',
      `  sorted processedOn of all three queues; most in any W: the largest count with t_last - t_first < W (must be ≤ N). pass: ≥ ${SUSTAINED_TARGET} of N/(W+h) and ≤ N.`,
    ],
  };
}
