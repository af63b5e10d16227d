import { KeyValue } from '../declarations/Key';
import { Limit } from '../declarations/Limit';
import { Rate } from '../declarations/Rate';
import { formatWindow } from '../declarations/window';
import { formatDuration } from '../declarations/windowText';
import { textTable } from '../terminal/textTable';

/** '100 per 1s'. */
export function formatLimit(limit: Limit): string {
  return `${limit.max} per ${formatWindow(limit.windowMs)}`;
}

/** '500 per 1s, burst 50'. */
export function formatRate(rate: Rate): string {
  return `${rate.n} per ${formatWindow(rate.perMs)}, burst ${rate.burst}`;
}

/** Every window limit, then the rate and the concurrency: '100 per 1s, 1,000 per 1m; rate 50 per 1s, burst 10; concurrency 5'. */
export function formatLimits(limits: readonly Limit[], rate?: Rate | null, concurrency?: number | null): string {
  const parts = formatWindowsAndRate(limits, rate);
  if (concurrency === undefined || concurrency === null) return parts;
  return parts ? `${parts}; concurrency ${concurrency}` : `concurrency ${concurrency}`;
}

function formatWindowsAndRate(limits: readonly Limit[], rate?: Rate | null): string {
  const windows = limits.map(formatLimit).join(', ');
  if (!rate) return windows;
  return windows ? `${windows}; rate ${formatRate(rate)}` : `rate ${formatRate(rate)}`;
}

/** '1,234'. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** 'n things' with the plural when n is not 1. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

export { formatDuration };

/** A moment relative to `now` (both ms on one clock): 'in 4.2s', '3.1s ago', 'now'. */
export function formatRelative(at: number, now: number): string {
  const diff = at - now;
  if (Math.abs(diff) < 50) return 'now';
  return diff > 0 ? `in ${formatDuration(diff)}` : `${formatDuration(-diff)} ago`;
}

/** How long something that ends at `until` (null: when lifted) lasts from `now`: 'for 4m 57s more', 'until resumed'. */
export function formatRemaining(until: number | null, now: number, whenLifted = 'until resumed'): string {
  if (until === null) return whenLifted;
  return until - now < 50 ? 'ending now' : `for ${formatDuration(until - now)} more`;
}

/** A key value as the `bucket` command takes it: strings as they are, numbers and booleans as json:<value>. */
export function formatKeyValue(value: KeyValue): string {
  if (typeof value !== 'string') return `json:${JSON.stringify(value)}`;
  if (value.length === 0 || value.startsWith('json:') || /[\s"'\\]/.test(value)) return JSON.stringify(value);
  return value;
}

/** A bucket: its key values; null is the bucket of jobs missing the key, [] an unkeyed throttle's one bucket. */
export function formatBucketKey(key: readonly KeyValue[] | null): string {
  if (key === null) return '(missing key)';
  if (key.length === 0) return '(the one bucket)';
  return key.map(formatKeyValue).join(' ');
}

// The commands' tables are drawn as watch's and the demo's are (src/terminal/textTable).
export { textTable as table } from '../terminal/textTable';
export type { Align } from '../terminal/textTable';

/** '[#####...........]': value against max, full (and marked '+' at the end) when over. */
export function bar(value: number, max: number, width = 20): string {
  const over = value > max;
  const filled = max <= 0 ? 0 : Math.min(width, Math.round((value / max) * width));
  const cells = '#'.repeat(filled) + '.'.repeat(width - filled);
  return `[${over ? `${cells.slice(0, -1)}+` : cells}]`;
}

/** Lines as label/value pairs, the labels padded to one width. */
export function fields(pairs: readonly (readonly [string, string])[], indent = ''): string[] {
  return textTable(pairs.map(([label, value]) => [label, value]), { indent });
}
