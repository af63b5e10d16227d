import { Limit } from '../declarations/Limit';
import { Rate } from '../declarations/Rate';
import { formatWindow } from '../declarations/window';

/** The most a bucket can sustain, and which of its limits sets it (seed 004's effective dispatch rate). */
export interface EffectiveRate {
  /** Deliveries per second a bucket can sustain: the least of each window's N / W and the rate's n / per. */
  perSecond: number;
  /** The limit that sets it: '100 per 1s', or 'rate 500 per 1s'. */
  binding: string;
}

export function effectiveRate(limits: readonly Limit[], rate: Rate | null | undefined): EffectiveRate | null {
  const candidates = [
    ...limits.map((l) => ({ perSecond: (l.max * 1000) / l.windowMs, binding: `${l.max} per ${formatWindow(l.windowMs)}` })),
    ...(rate ? [{ perSecond: (rate.n * 1000) / rate.perMs, binding: `rate ${rate.n} per ${formatWindow(rate.perMs)}` }] : []),
  ];
  if (candidates.length === 0) return null;
  return candidates.reduce((least, c) => (c.perSecond < least.perSecond ? c : least));
}

/**
 * Which limit holds a bucket back now: the one with the least room left (a full one first), from what it
 * counts; null when every limit has room.
 */
export function bindingNow(limits: readonly { windowMs: number; max: number; counted: number; roomAt: number | null }[], rate: { n: number; perMs: number; room: number; roomAt: number | null } | null): string | null {
  const full = limits.filter((l) => l.roomAt !== null);
  if (full.length > 0) {
    const last = full.reduce((a, b) => ((b.roomAt ?? 0) > (a.roomAt ?? 0) ? b : a));
    return `${last.max} per ${formatWindow(last.windowMs)}`;
  }
  if (rate && rate.roomAt !== null) return `rate ${rate.n} per ${formatWindow(rate.perMs)}`;
  return null;
}
