import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { QueueStats, ThrottleStats } from '../../admin/types';
import { unlessGone } from '../../admin/unlessGone';
import { Missing } from '../../declarations/Missing';
import { fields, formatBucketKey, formatCount, formatDuration, formatLimits, formatRemaining, plural, table } from '../format';
import type { FairShares } from '../../admin/fairShares';
import { runCommand, toJson } from '../run';

export interface StatsOptions {
  json?: boolean;
}

/** `bullmq-throttle stats <queue>`: the queue's counts, held jobs, workers and throttles in effect. */
export async function statsCommand(admin: ThrottleAdmin, queue: string, options: StatsOptions = {}): Promise<string> {
  const stats = await admin.queueStats(queue);
  if (options.json) return toJson(stats);
  // What holds each throttle now besides its limits: pauses, run-time limits, a recovery hold (no bucket listed).
  const states = await Promise.all(stats.throttles.map((t) => unlessGone(admin.throttleStats(t.name, { top: 0 }))));
  return formatQueueStats(stats, admin.keys.prefix, states);
}

/** '-', or what holds the throttle besides its limits: 'paused for 4m 57s more; limits set at run time'. */
export function formatThrottleState(stats: ThrottleStats | null): string {
  if (!stats) return '-';
  const parts: string[] = [];
  if (stats.recoveryHold) parts.push(`held after a Redis restart ${formatRemaining(stats.recoveryHold.until, stats.at)}`);
  if (stats.paused?.all) parts.push(`paused ${formatRemaining(stats.paused.all.until, stats.at)}`);
  if (stats.paused && stats.paused.buckets > 0) parts.push(`${plural(stats.paused.buckets, 'bucket')} paused`);
  if (stats.adaptive && stats.adaptive.loweredBuckets > 0) {
    parts.push(stats.adaptive.live === null ? `${plural(stats.adaptive.loweredBuckets, 'bucket')} lowered by 429s` : `lowered by 429s to ${stats.adaptive.live}`);
  }
  if (stats.limitSource === 'override') parts.push(`limits set at run time ${formatRemaining(stats.overrides.throttle?.until ?? null, stats.at, 'until cleared')}`);
  if (stats.overrides.buckets > 0) parts.push(`${plural(stats.overrides.buckets, 'bucket')} with limits of their own`);
  return parts.length > 0 ? parts.join('; ') : '-';
}

const COUNT_ORDER = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children', 'paused', 'completed', 'failed'];

/** bullmq's counts in a fixed order (any others after): 'waiting 0 · active 3 · …'. */
export function formatJobCounts(counts: Record<string, number>): string {
  const names = [...COUNT_ORDER.filter((n) => n in counts), ...Object.keys(counts).filter((n) => !COUNT_ORDER.includes(n)).sort()];
  return names.map((name) => `${name} ${formatCount(counts[name])}`).join(' · ');
}

export function formatHeld(stats: QueueStats): string {
  return `${plural(stats.throttled, 'job')} held: ${formatCount(stats.heldByFullBuckets)} on full buckets, `
    + `${formatCount(stats.classifying)} being classified`;
}

export function formatWorkers(stats: QueueStats): string {
  const plain = stats.plainWorkers === null ? 'plain Workers unknown (CLIENT LIST refused)'
    : stats.plainWorkers === 0 ? '0 plain Workers'
      : `${plural(stats.plainWorkers, 'plain Worker')} (they bypass the throttles)`;
  return `${plural(stats.throttledWorkers, 'ThrottledWorker')}, ${plain}`;
}

export function formatMissing(missing: Missing): string {
  return missing === Missing.SharedBucket ? 'shared bucket' : 'unthrottled';
}

/** 'by [Key.data("tenant")], 3 groups: acme 50% (weight 2), bigco 33%, … of 1,200 delivered'. */
export function formatFairShares(fair: FairShares): string {
  if (fair.delivered === 0) return `by ${fair.key}: nothing delivered yet`;
  const top = fair.top.map((g) => `${formatBucketKey(g.key)} ${Math.round(g.share * 100)}%${g.weight !== 1 ? ` (weight ${g.weight})` : ''}`);
  return `by ${fair.key}, ${plural(fair.groups, 'group')}: ${top.join(', ')}${fair.groups > fair.top.length ? ', …' : ''} of ${formatCount(fair.delivered)} delivered`;
}

export function formatQueueStats(stats: QueueStats, prefix?: string, states?: readonly (ThrottleStats | null)[]): string {
  const lines = [
    `queue ${stats.queue}${prefix ? `  (prefix ${prefix})` : ''}`,
    ...fields([
      ['jobs', formatJobCounts(stats.counts)],
      ['throttled', formatHeld(stats)],
      ['oldest', stats.oldestHeldMs === null ? 'no job waits on a full bucket' : `waiting ${formatDuration(stats.oldestHeldMs)} on a full bucket`],
      ['workers', formatWorkers(stats)],
      ...(stats.fairness ? [['fairness', formatFairShares(stats.fairness)] as [string, string]] : []),
    ], '  '),
    '',
  ];
  if (stats.throttles.length === 0) {
    lines.push('no throttle in effect (no live ThrottledWorker declares one)');
  } else {
    lines.push(...table([
      ['throttle', 'limits', 'key', 'missing key', 'declared by', ...(states ? ['now'] : [])],
      ...stats.throttles.map((t, i) => [
        t.name,
        formatLimits(states?.[i]?.limits ?? t.limits, t.rate, t.concurrency),
        t.key ? t.key.join(' + ') : '(none)',
        t.key ? formatMissing(t.missing) : '-',
        plural(t.declaredBy, 'worker'),
        ...(states ? [formatThrottleState(states[i])] : []),
      ]),
    ]));
  }
  return lines.join('\n');
}

export function registerStats(program: Command): void {
  program
    .command('stats')
    .description("a queue's job counts, jobs held by throttles, workers and the throttles in effect")
    .argument('<queue>', 'the queue name')
    .action(async (queue: string, _options: unknown, command: Command) => {
      await runCommand(command, (admin, globals) => statsCommand(admin, queue, { json: globals.json }));
    });
}
