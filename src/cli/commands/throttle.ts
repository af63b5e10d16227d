import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { ThrottleStats } from '../../admin/types';
import type { AdaptiveThrottleReading } from '../../admin/adaptiveReading';
import { formatWindow } from '../../declarations/window';
import { Missing } from '../../declarations/Missing';
import { formatBucketKey, formatCount, formatLimit, formatLimits, formatRemaining, plural, table } from '../format';
import { parseWholeNumber } from '../options';
import { runCommand, toJson } from '../run';

export const DEFAULT_TOP = 10;

export interface ThrottleOptions {
  top?: number;
  json?: boolean;
}

/** `bullmq-throttle throttle <name>`: a throttle's buckets, what waits on them and its last window. */
export async function throttleCommand(admin: ThrottleAdmin, name: string, options: ThrottleOptions = {}): Promise<string> {
  const top = options.top ?? DEFAULT_TOP;
  const stats = await admin.throttleStats(name, { top });
  return options.json ? toJson(stats) : formatThrottleStats(stats, top);
}

export function formatKeyDescription(stats: Pick<ThrottleStats, 'key' | 'missing'>): string {
  if (!stats.key) return '(none): one bucket for every job';
  return `${stats.key.join(' + ')}; jobs missing it ${stats.missing === Missing.SharedBucket ? 'share one bucket' : 'are not throttled'}`;
}

/** Per limit, what was delivered in its last window: exact for an unkeyed throttle, all buckets together for a keyed one. */
export function formatLastWindow(stats: Pick<ThrottleStats, 'key' | 'lastWindow'>): string[] {
  return stats.lastWindow.map((w) => (stats.key
    ? `${formatCount(w.delivered)} delivered in the last ${formatWindow(w.windowMs)}, all buckets together (limit ${formatLimit(w)} per bucket)`
    : `${formatCount(w.delivered)} / ${formatCount(w.max)} counted in the last ${formatWindow(w.windowMs)}`));
}

function formatPerSecond(perSecond: number): string {
  return perSecond >= 10 ? formatCount(Math.round(perSecond)) : String(Math.round(perSecond * 1000) / 1000);
}

/** ' (set at run time until …)' while an override replaces the declared limits, and the buckets with their own. */
function formatOverride(stats: ThrottleStats): string {
  const whole = stats.overrides.throttle;
  const parts = [
    whole ? `set at run time ${formatRemaining(whole.until, stats.at, 'until cleared')}` : '',
    stats.overrides.buckets > 0 ? `${plural(stats.overrides.buckets, 'bucket')} with limits of their own` : '',
  ].filter(Boolean);
  return parts.length > 0 ? ` (${parts.join('; ')})` : '';
}

/** 'live 25 of 100 (min 5), lowered 3s ago', or for a keyed throttle '2 buckets lowered by 429s: acme 12, ...'. */
export function formatAdaptive(adaptive: AdaptiveThrottleReading, at: number): string {
  const limit = adaptive.target === 'rate' ? 'the rate' : `the ${formatWindow(adaptive.target)} limit`;
  const range = `(${limit}, min ${formatCount(adaptive.min)}, ceiling ${formatCount(adaptive.ceiling)})`;
  if (adaptive.live !== null) {
    const lowered = adaptive.loweredBuckets > 0 && adaptive.live < adaptive.ceiling;
    return `live ${formatCount(adaptive.live)} ${range}${lowered ? ', lowered by 429s' : ''}`;
  }
  if (adaptive.loweredBuckets === 0) return `every bucket at its ceiling ${range}`;
  const latest = adaptive.lowered.map((b) => `${formatBucketKey(b.key)} ${formatCount(b.live)}`).join(', ');
  return `${plural(adaptive.loweredBuckets, 'bucket')} lowered by 429s ${range}${latest ? `: ${latest}` : ''}`;
}

export function formatThrottleStats(stats: ThrottleStats, top = DEFAULT_TOP): string {
  const last = formatLastWindow(stats);
  const lines = [
    `throttle ${stats.name}`,
    ...table([
      ['limits', `${formatLimits(stats.limits, stats.rate, stats.concurrency)}${stats.key ? ', for each bucket' : ''}${formatOverride(stats)}`],
      ...(stats.effective ? [['sustains', `${formatPerSecond(stats.effective.perSecond)} per ${stats.key ? 'bucket' : 'second'}${stats.key ? ' per second' : ''}, set by ${stats.effective.binding}`] as [string, string]] : []),
      ['key', formatKeyDescription(stats)],
      ['queues', `${stats.queues.join(', ') || '(none)'} (declared by ${plural(stats.declaredBy, 'live ThrottledWorker')})`],
      ['buckets', `${formatCount(stats.activeBuckets)} active, ${formatCount(stats.bucketsAtLimit)} at their limit`],
      ['waiting', `${plural(stats.waiting, 'job')} held on full buckets`],
      ...(stats.paused ? [['paused', [
        stats.paused.all ? `every bucket ${formatRemaining(stats.paused.all.until, stats.at)}` : '',
        stats.paused.buckets > 0 ? `${plural(stats.paused.buckets, 'bucket')} on their own` : '',
      ].filter(Boolean).join('; ')] as [string, string]] : []),
      ...(stats.adaptive ? [['adaptive', formatAdaptive(stats.adaptive, stats.at)] as [string, string]] : []),
      ...last.map((line, i): [string, string] => [i === 0 ? 'last window' : '', line]),
      ['totals', `${formatCount(stats.deliveredTotal)} delivered, ${plural(stats.limitedTotal, 'job')} waited on a full bucket, since its keys exist`],
    ], { indent: '  ' }),
  ];
  if (top > 0) {
    lines.push('');
    if (stats.topBuckets.length === 0) {
      lines.push('no bucket has jobs waiting');
    } else {
      lines.push(`top waiting buckets (up to ${top})`);
      lines.push(...table([
        ['bucket', 'waiting'],
        ...stats.topBuckets.map((b) => [formatBucketKey(b.key), formatCount(b.waiting)]),
      ], { indent: '  ', align: ['left', 'right'] }));
    }
  }
  return lines.join('\n');
}

export function registerThrottle(program: Command): void {
  program
    .command('throttle')
    .description("a throttle's limits, active and full buckets, jobs waiting, the last window and the top waiting buckets")
    .argument('<name>', 'the throttle name')
    .option('--top <n>', 'how many of the buckets with the most jobs waiting to list', String(DEFAULT_TOP))
    .action(async (name: string, options: { top: string }, command: Command) => {
      const top = parseWholeNumber('--top', options.top, 0, 10_000);
      await runCommand(command, (admin, globals) => throttleCommand(admin, name, { top, json: globals.json }));
    });
}
