import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { QueueStats } from '../../admin/types';
import { Missing } from '../../declarations/Missing';
import { fields, formatCount, formatDuration, formatLimits, plural, table } from '../format';
import { runCommand, toJson } from '../run';

export interface StatsOptions {
  json?: boolean;
}

/** `bullmq-throttle stats <queue>`: the queue's counts, held jobs, workers and throttles in effect. */
export async function statsCommand(admin: ThrottleAdmin, queue: string, options: StatsOptions = {}): Promise<string> {
  const stats = await admin.queueStats(queue);
  return options.json ? toJson(stats) : formatQueueStats(stats, admin.keys.prefix);
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

export function formatQueueStats(stats: QueueStats, prefix?: string): string {
  const lines = [
    `queue ${stats.queue}${prefix ? `  (prefix ${prefix})` : ''}`,
    ...fields([
      ['jobs', formatJobCounts(stats.counts)],
      ['throttled', formatHeld(stats)],
      ['oldest', stats.oldestHeldMs === null ? 'no job waits on a full bucket' : `waiting ${formatDuration(stats.oldestHeldMs)} on a full bucket`],
      ['workers', formatWorkers(stats)],
    ], '  '),
    '',
  ];
  if (stats.throttles.length === 0) {
    lines.push('no throttle in effect (no live ThrottledWorker declares one)');
  } else {
    lines.push(...table([
      ['throttle', 'limits', 'key', 'missing key', 'declared by'],
      ...stats.throttles.map((t) => [
        t.name,
        formatLimits(t.limits, t.rate, t.concurrency),
        t.key ? t.key.join(' + ') : '(none)',
        t.key ? formatMissing(t.missing) : '-',
        plural(t.declaredBy, 'worker'),
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
