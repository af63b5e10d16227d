/**
 * How an overview becomes one flow sample per throttle (deliveries, the rate, units in flight), for the charts
 * of throttles with a rate or a concurrency. Shared by the server's history and the page's, as series.ts is;
 * types only from wire.ts.
 */
import type { WireFlowSeries, WireThrottle } from './wire';

export interface FlowSample {
  deliveredTotal: number;
  ratePerSecond: number | null;
  inFlight: number | null;
  inFlightMax: number | null;
  inFlightKey: string | null;
}

/** Deliveries per second are taken over the samples of the last 5 s, so that one late sample does not zigzag the line. */
const PER_SECOND_SPAN_MS = 5_000;
/** Further apart than this (a dashboard restarted, say), two samples give no rate: the line has a gap. */
const GAP_MS = 15_000;

export function emptyFlowSeries(): WireFlowSeries {
  return { t: [], deliveredTotal: [], perSecond: [], ratePerSecond: [], inFlight: [], inFlightMax: [], inFlightKey: [] };
}

export function flowSample(throttle: WireThrottle): FlowSample {
  return {
    deliveredTotal: throttle.deliveredTotal,
    ratePerSecond: throttle.rate ? (throttle.rate.n * 1000) / throttle.rate.perMs : null,
    inFlight: throttle.inFlight?.counted ?? null,
    inFlightMax: throttle.concurrency,
    inFlightKey: throttle.inFlight ? JSON.stringify(throttle.inFlight.key) : null,
  };
}

function perSecondAt(series: WireFlowSeries, at: number, total: number): number | null {
  let from = series.t.length - 1;
  if (from < 0 || at - series.t[from] > GAP_MS) return null;
  while (from > 0 && at - series.t[from - 1] <= PER_SECOND_SPAN_MS) from--;
  const delivered = total - series.deliveredTotal[from];
  // Fewer than before: the throttle's statistics were reset (their keys lapsed); no rate across that.
  return delivered >= 0 ? (delivered * 1000) / (at - series.t[from]) : null;
}

/** Appends a sample, keeping at most `capacity`; like pushSample, time only goes forward. */
export function pushFlowSample(series: WireFlowSeries, at: number, sample: FlowSample, capacity: number): void {
  if (series.t.length > 0 && at <= series.t[series.t.length - 1]) return;
  series.perSecond.push(perSecondAt(series, at, sample.deliveredTotal));
  series.t.push(at);
  series.deliveredTotal.push(sample.deliveredTotal);
  series.ratePerSecond.push(sample.ratePerSecond);
  series.inFlight.push(sample.inFlight);
  series.inFlightMax.push(sample.inFlightMax);
  series.inFlightKey.push(sample.inFlightKey);
  if (series.t.length > capacity) for (const column of Object.values(series) as unknown[][]) column.shift();
}
