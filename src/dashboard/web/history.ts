import type { WireHistory, WireOverview, WireSeries } from '../wire';

/**
 * The charts' samples on the page: seeded with the server's history when the page loads, then one sample per
 * overview the server sends (about one a second), so that a chart draws the last minutes at once and moves on.
 */
export class ClientHistory {
  private series: WireHistory = {};

  constructor(private readonly capacity: number, private readonly sampleEveryMs: number) {}

  /** The time the history covers when full. */
  get spanMs(): number {
    return this.capacity * this.sampleEveryMs;
  }

  seed(history: WireHistory): void {
    this.series = structuredClone(history);
  }

  append(overview: WireOverview): void {
    for (const throttle of overview.throttles) {
      const limits = (this.series[throttle.name] ??= {});
      for (const window of throttle.lastWindow) {
        const s = (limits[String(window.windowMs)] ??= { t: [], delivered: [], max: [] });
        if (s.t.length > 0 && throttle.at <= s.t[s.t.length - 1]) continue;
        s.t.push(throttle.at);
        s.delivered.push(window.delivered);
        s.max.push(window.max);
        if (s.t.length > this.capacity) {
          s.t.shift();
          s.delivered.shift();
          s.max.shift();
        }
      }
    }
  }

  of(throttle: string, windowMs: number): WireSeries {
    return this.series[throttle]?.[String(windowMs)] ?? { t: [], delivered: [], max: [] };
  }
}
