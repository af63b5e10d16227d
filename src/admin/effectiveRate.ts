import { Limit } from '../declarations/Limit';
import { Rate } from '../declarations/Rate';
import { formatWindow } from '../declarations/window';

/** The most a bucket can sustain, and which of its limits sets it (seed 004's effective dispatch rate). */
export interface EffectiveRate {
  /** Deliveries per second a bucket can sustain: the least of each window's N / W and the rate's n / per. */
  perSecond: number;
  /** The limit that sets it: '100 per 1s', 'rate 500 per 1s', or 'concurrency 3'. */
  binding: string;
  /** With a concurrency: the measured mean processing time (ms) that turns it into a rate; null before any job ran. */
  processingMs?: number | null;
}

/**
 * The least of each window's N / W, the rate's n / per and a concurrency's n / (mean processing time): a
 * concurrency with no measured processing time yet sustains an unknown rate and is left out (null when it
 * is all the throttle declares).
 */
export function effectiveRate(limits: readonly Limit[], rate: Rate | null | undefined, concurrency?: { n: number; processingMs: number | null }): EffectiveRate | null {
  const candidates: EffectiveRate[] = [
    ...limits.map((l) => ({ perSecond: (l.max * 1000) / l.windowMs, binding: `${l.max} per ${formatWindow(l.windowMs)}` })),
    ...(rate ? [{ perSecond: (rate.n * 1000) / rate.perMs, binding: `rate ${rate.n} per ${formatWindow(rate.perMs)}` }] : []),
    ...(concurrency && concurrency.processingMs ? [{ perSecond: (concurrency.n * 1000) / concurrency.processingMs, binding: `concurrency ${concurrency.n}` }] : []),
  ];
  const measured = concurrency ? { processingMs: concurrency.processingMs } : {};
  if (candidates.length === 0) return null;
  return { ...candidates.reduce((least, c) => (c.perSecond < least.perSecond ? c : least)), ...measured };
}

/**
 * Which limit holds a bucket back now: the one with the least room left (a full one first), from what it
 * counts; null when every limit has room.
 */
export function bindingNow(limits: readonly { windowMs: number; max: number; counted: number; roomAt: number | null }[], rate: { n: number; perMs: number; room: number; roomAt: number | null } | null, inFlight: { max: number; counted: number } | null = null): string | null {
  if (inFlight && inFlight.counted >= inFlight.max) return `concurrency ${inFlight.max}`;
  const full = limits.filter((l) => l.roomAt !== null);
  if (full.length > 0) {
    const last = full.reduce((a, b) => ((b.roomAt ?? 0) > (a.roomAt ?? 0) ? b : a));
    return `${last.max} per ${formatWindow(last.windowMs)}`;
  }
  if (rate && rate.roomAt !== null) return `rate ${rate.n} per ${formatWindow(rate.perMs)}`;
  return null;
}
