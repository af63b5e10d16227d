import type { WireKeyValue } from '../wire';
import { formatDuration, formatWindow, windowTextMs } from '../../declarations/windowText';

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

// A window as declarations write it: '1s', '10m', '1h', '250ms'; a span of time as people write it, as the CLI
// does: '850ms', '12.3s', '4m 57s', '3h 5m'.
export { formatDuration, formatWindow };

export function formatLimit(limit: { max: number; windowMs: number }): string {
  return `${formatCount(limit.max)} per ${formatWindow(limit.windowMs)}`;
}

/** A rate per second to three significant figures: '5/s', '12.3/s', '0.00333/s'. */
export function formatPerSecond(perSecond: number): string {
  return `${perSecond.toLocaleString('en-US', { maximumSignificantDigits: 3 })}/s`;
}

/** A bucket's key as people read it: its values; the unkeyed throttle's one bucket; the bucket of jobs missing the key. */
export function formatKey(key: WireKeyValue[] | null): string {
  if (key === null) return '(jobs missing the key)';
  if (key.length === 0) return '(the one bucket)';
  return key.map((value) => (typeof value === 'string' ? value : JSON.stringify(value))).join(', ');
}

/** Until a time on the Redis clock, seen from `at` on the same clock: 'now', 'in 12 s', or 'until resumed'. */
export function formatUntil(until: number | null, at: number): string {
  if (until === null) return 'until resumed';
  return until <= at ? 'now' : `in ${formatDuration(until - at)}`;
}

export function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/** '30s', '5m', '1h' in ms; undefined for empty text; NaN for text that is no duration. */
export function parseDurationMs(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  return windowTextMs(text) ?? NaN;
}

/** '50/1s, 1000/1m' as setLimits takes it; the server checks each limit, so only the shape is checked here. */
export function parseLimits(text: string): { max: number; window: string }[] | undefined {
  const parts = text.split(',').map((part) => /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(part));
  if (parts.length === 0 || parts.some((m) => m === null)) return undefined;
  return parts.map((m) => ({ max: Number(m![1]), window: m![2] }));
}
