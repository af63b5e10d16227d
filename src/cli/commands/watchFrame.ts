import { BucketStats, QueueStats, ThrottleStats } from '../../admin/types';
import { formatWindow } from '../../declarations/window';
import { fitLine } from '../../terminal/fitLines';
import { textTable } from '../../terminal/textTable';
import { wrapItems } from '../../terminal/wrapItems';
import { bar, formatBucketKey, formatCount, formatDuration, formatLimit, formatLimits, plural } from '../format';
import { formatHeld, formatJobCounts, formatWorkers } from './stats';

/** What one refresh of `watch` reads: the queue, each throttle in effect on it, and the buckets its rows show. */
export interface WatchSnapshot {
  queue: QueueStats;
  throttles: ThrottleStats[];
  /**
   * Per throttle name: the buckets read one by one. A keyed throttle's limits hold per bucket, so its busiest
   * buckets (most jobs waiting) are shown against them; an unkeyed throttle's one bucket is what its limits count.
   */
  buckets: Record<string, BucketStats[]>;
}

export interface WatchFrameOptions {
  /** Columns the lines may use (the terminal's width). */
  width: number;
  intervalMs: number;
  prefix?: string;
}

const MAX_BAR = 20;
const MIN_BAR = 6;
const COUNTED = 'counted now';
const MAX_KEY = 24;
const LABEL = 'throttled'.length;

function formatInterval(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : formatDuration(ms);
}

export function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

interface Fill {
  /** As BucketStats.bindingNow names a limit, so that the binding one can be told. */
  name: string;
  label: string;
  counted: number;
  max: number;
}

/** How full one bucket is under each of its limits, now. */
function bucketFills(b: BucketStats): Fill[] {
  return [
    ...b.limits.map((l) => ({ name: formatLimit(l), label: formatLimit(l), counted: l.counted, max: l.max })),
    ...(b.rate ? [{ name: `rate ${b.rate.n} per ${formatWindow(b.rate.perMs)}`, label: `rate ${b.rate.n} per ${formatWindow(b.rate.perMs)}, burst ${b.rate.burst}`, counted: b.rate.burst - b.rate.room, max: b.rate.burst }] : []),
    ...(b.inFlight ? [{ name: `concurrency ${b.inFlight.max}`, label: `concurrency ${b.inFlight.max} in flight`, counted: b.inFlight.counted, max: b.inFlight.max }] : []),
  ];
}

/** The limit holding the bucket back now ('2 per 1m', 'rate 5 per 1s', 'paused'), or that it has room. */
function heldBy(b: BucketStats): string {
  return b.bindingNow ?? 'room now';
}

function widest(lines: readonly string[]): number {
  return Math.max(0, ...lines.map((l) => [...l].length));
}

/**
 * One table of fills: per bucket shown, a row per limit (its count now against the per-bucket limit), the
 * bucket's jobs waiting and the limit holding it back on its first row. The bars take what width is left.
 */
function fillTable(buckets: readonly BucketStats[], keyed: boolean, width: number): string[] {
  const head = [...(keyed ? ['bucket'] : []), 'limit', COUNTED, '', ...(keyed ? ['waiting'] : []), 'held by'];
  const rowsWith = (barWidth: number) => [head, ...buckets.flatMap((b) => bucketFills(b).map((f, i) => [
    ...(keyed ? [i === 0 ? fitLine(formatBucketKey(b.key), MAX_KEY) : ''] : []),
    f.label,
    barWidth > 0 ? bar(f.counted, f.max, barWidth) : '',
    `${formatCount(f.counted)}/${formatCount(f.max)}`,
    ...(keyed ? [i === 0 ? formatCount(b.waiting) : ''] : []),
    i === 0 ? heldBy(b) : '',
  ]))];
  const align = [...(keyed ? ['left' as const] : []), 'left' as const, 'left' as const, 'right' as const, ...(keyed ? ['right' as const] : []), 'left' as const];
  // Without bars the bars' column is its heading's width: what is left beside the other columns is theirs.
  const others = widest(textTable(rowsWith(0), { indent: '  ', align })) - COUNTED.length;
  const barWidth = Math.min(MAX_BAR, Math.max(MIN_BAR, width - others - 2));
  return textTable(rowsWith(barWidth), { indent: '  ', align });
}

/** A throttle's heading: its limits, and its buckets and jobs now (job and bucket counts, not events). */
function throttleHeading(t: ThrottleStats, width: number): string[] {
  return wrapItems([
    t.name,
    `${formatLimits(t.limits, t.rate, t.concurrency)}${t.key ? ' per bucket' : ''}`,
    `${formatCount(t.bucketsAtLimit)} of ${plural(t.activeBuckets, 'active bucket')} at limit`,
    `${plural(t.waiting, 'job')} waiting`,
    t.paused?.all ? 'paused' : '',
    t.recoveryHold ? `held after a Redis restart for ${formatDuration(t.recoveryHold.until - t.at)}` : '',
  ], width, ' · ', '  ');
}

/**
 * A throttle's lines. Keyed: its limits hold per bucket, so its busiest buckets are shown each against the
 * per-bucket limit (never all buckets' total against it) with the limit holding each back. Unkeyed: its one
 * bucket. Deliveries over all of a keyed throttle's buckets are events, shown as such when no bucket waits.
 */
export function formatThrottle(t: ThrottleStats, buckets: readonly BucketStats[], width: number): string[] {
  const lines = throttleHeading(t, width);
  if (buckets.length > 0) return [...lines, ...fillTable(buckets, t.key !== null, width)];
  if (t.key) {
    const events = t.lastWindow.map((w) => `${plural(w.delivered, 'delivery', 'deliveries')} in the last ${formatWindow(w.windowMs)}, all buckets together`);
    return [...lines, ...wrapItems(['no bucket has jobs waiting', ...events], width - 2).map((l) => `  ${l}`)];
  }
  // The one bucket could not be read (its throttle went away between reads): what the throttle's totals say.
  return [...lines, ...textTable(t.lastWindow.map((w) => [formatLimit(w), bar(w.delivered, w.max, MIN_BAR), `${formatCount(w.delivered)}/${formatCount(w.max)}`]), { indent: '  ' })];
}

/** Label/value lines, a value's items wrapped under it rather than past the edge. */
function fieldLines(pairs: readonly (readonly [string, readonly string[]])[], width: number): string[] {
  return textTable(pairs.flatMap(([label, items]) => wrapItems(items, width - LABEL - 2).map((line, i) => [i === 0 ? label : '', line])));
}

/** One frame of the human view, laid out for `width` columns. */
export function formatWatchFrame(snapshot: WatchSnapshot, options: WatchFrameOptions): string[] {
  const q = snapshot.queue;
  const { width } = options;
  const throttles = snapshot.throttles.length === 0
    ? ['no throttle in effect (no live ThrottledWorker declares one)']
    : snapshot.throttles.flatMap((t) => formatThrottle(t, snapshot.buckets[t.name] ?? [], width));
  return [
    ...wrapItems(['bullmq-throttle watch', `queue ${q.queue}`, options.prefix ? `prefix ${options.prefix}` : '', clock(q.at),
      `every ${formatInterval(options.intervalMs)}`, '(Ctrl-C to quit)'], width, '  ', '  '),
    ...fieldLines([
      ['jobs', formatJobCounts(q.counts).split(' · ')],
      ['throttled', [formatHeld(q), q.oldestHeldMs === null ? '' : `oldest waiting ${formatDuration(q.oldestHeldMs)}`]],
      ['workers', [formatWorkers(q)]],
    ], width),
    '',
    ...throttles,
  ];
}
