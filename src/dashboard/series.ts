/**
 * How an overview becomes one point per limit of the charts' history. Shared by the server's history and the
 * page's (which appends the overviews the server sends), so that both record the same figures. Types only from
 * wire.ts: the page imports this too.
 */
import type { WireBusiest, WireSeries, WireThrottle } from './wire';

export interface LimitSample {
  windowMs: number;
  max: number;
  /** All buckets together. */
  delivered: number;
  busiest: number | null;
  busiestKey: string | null;
}

export function emptySeries(): WireSeries {
  return { t: [], busiest: [], busiestKey: [], delivered: [], max: [] };
}

/** One sample per limit of the throttle; `busiest`: the overview's busiest buckets of that throttle. */
export function limitSamples(throttle: WireThrottle, busiest: readonly WireBusiest[] | undefined): LimitSample[] {
  return throttle.lastWindow.map((window) => {
    const found = busiest?.find((b) => b.windowMs === window.windowMs);
    return {
      windowMs: window.windowMs,
      max: window.max,
      delivered: window.delivered,
      busiest: found ? found.counted : null,
      busiestKey: found ? JSON.stringify(found.key) : null,
    };
  });
}

/** Appends a sample, keeping at most `capacity`. A read answered late can come after a newer one: time only goes forward on a chart. */
export function pushSample(series: WireSeries, at: number, sample: LimitSample, capacity: number): void {
  if (series.t.length > 0 && at <= series.t[series.t.length - 1]) return;
  series.t.push(at);
  series.busiest.push(sample.busiest);
  series.busiestKey.push(sample.busiestKey);
  series.delivered.push(sample.delivered);
  series.max.push(sample.max);
  if (series.t.length > capacity) for (const column of Object.values(series) as unknown[][]) column.shift();
}
