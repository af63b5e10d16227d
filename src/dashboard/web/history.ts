import { emptyFlowSeries, flowSample, pushFlowSample } from '../flowSeries';
import { emptySeries, limitSamples, pushSample } from '../series';
import type { WireFlowHistory, WireFlowSeries, WireHistory, WireOverview, WireSeries } from '../wire';

/**
 * The charts' samples on the page: seeded with the server's history when the page loads, then one sample per
 * overview the server sends (about one a second), so that a chart draws the history at once and moves on.
 */
export class ClientHistory {
  private series: WireHistory = {};
  private flows: WireFlowHistory = {};

  constructor(private readonly capacity: number, private readonly sampleEveryMs: number) {}

  /** The time the history covers when full. */
  get spanMs(): number {
    return this.capacity * this.sampleEveryMs;
  }

  seed(history: WireHistory, flows: WireFlowHistory): void {
    this.series = structuredClone(history);
    this.flows = structuredClone(flows);
  }

  append(overview: WireOverview): void {
    for (const throttle of overview.throttles) {
      const limits = (this.series[throttle.name] ??= {});
      for (const sample of limitSamples(throttle, overview.busiest[throttle.name])) {
        pushSample((limits[String(sample.windowMs)] ??= emptySeries()), throttle.at, sample, this.capacity);
      }
      pushFlowSample((this.flows[throttle.name] ??= emptyFlowSeries()), throttle.at, flowSample(throttle), this.capacity);
    }
  }

  of(throttle: string, windowMs: number): WireSeries {
    return this.series[throttle]?.[String(windowMs)] ?? emptySeries();
  }

  flowOf(throttle: string): WireFlowSeries {
    return this.flows[throttle] ?? emptyFlowSeries();
  }
}
