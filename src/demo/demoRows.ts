import { Delivery, PER_CUSTOMER_LIMIT, SMALL_CUSTOMERS, STRIPE_LIMIT } from './demoWorkload';

/** One row of the demo's view. */
export interface BucketRow {
  label: string;
  /** The bucket's limit per second; undefined for jobs no throttle paces. */
  limit: number | undefined;
  inLastSecond: number;
  delivered: number;
  total: number;
}

export const WINDOW_MS = 1000;

/**
 * The rows at `nowMs`, a time on the Redis clock (which processedOn is on): "the last second" is the window
 * (now - 1 s, now], exactly one window of the limits. Every delivery it counts lies within 1 s of every other,
 * so a figure above its limit means the guarantee itself was broken, and the final check from processedOn
 * (mostInAnyWindow) fails too. Measured up to now, not up to the last delivery, a window neither stretches
 * nor keeps counting deliveries long past.
 */
export function demoRows(delivered: readonly Delivery[], totals: ReadonlyMap<string, number>, nowMs: number): BucketRow[] {
  const inWindow = delivered.filter((d) => d.processedOn > nowMs - WINDOW_MS && d.processedOn <= nowMs);
  const recent = (match: (d: Delivery) => boolean) => inWindow.filter(match).length;
  const done = (match: (d: Delivery) => boolean) => delivered.filter(match).length;
  const charges = (d: Delivery) => d.charge;
  const of = (bucket: string) => (d: Delivery) => d.bucket === bucket;
  const chargesTotal = [...totals].filter(([bucket]) => bucket !== 'emails').reduce((sum, [, n]) => sum + n, 0);
  return [
    { label: 'stripe (all charges)', limit: STRIPE_LIMIT, inLastSecond: recent(charges), delivered: done(charges), total: chargesTotal },
    ...['acme', ...SMALL_CUSTOMERS].map((customer) => ({
      label: `  per-customer ${customer}`, limit: PER_CUSTOMER_LIMIT, inLastSecond: recent(of(customer)), delivered: done(of(customer)), total: totals.get(customer) ?? 0,
    })),
    { label: 'emails (unthrottled)', limit: undefined, inLastSecond: recent(of('emails')), delivered: done(of('emails')), total: totals.get('emails') ?? 0 },
  ];
}
