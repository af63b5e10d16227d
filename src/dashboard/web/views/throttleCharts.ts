import type { ClientHistory } from '../history';
import { h } from '../dom';
import type { WireThrottle } from '../../wire';
import { InFlightChart } from './inFlightChart';
import { LimitChart } from './limitChart';
import { RateChart } from './rateChart';

/** A chart of each kind kept until what it plots changes (a redeclaration with or without a key, a cost, a rate). */
interface Kept<C> {
  chart: C & { element: HTMLElement; dispose(): void };
  shape: string;
}

/**
 * A throttle's charts, one per limit kind: a chart per window; the deliveries per second against a rate (also
 * drawn for a throttle with no window, so that every card has its flow); units in flight against a
 * concurrency. Built once and updated in place, rebuilt only when what one plots changes.
 */
export class ThrottleCharts {
  readonly element = h('div', { class: 'charts' });
  private readonly windows = new Map<number, Kept<LimitChart>>();
  private rate: Kept<RateChart> | undefined;
  private inFlight: Kept<InFlightChart> | undefined;

  constructor(private readonly name: string) {}

  update(t: WireThrottle, history: ClientHistory): void {
    const keyed = t.key !== null;
    const costed = t.cost !== null;
    const windows = new Set(t.lastWindow.map((w) => w.windowMs));
    for (const [windowMs, kept] of this.windows) if (!windows.has(windowMs)) this.drop(kept, () => this.windows.delete(windowMs));
    for (const w of t.lastWindow) {
      const kept = this.keep(this.windows.get(w.windowMs), `${keyed}/${costed}`, () => new LimitChart(w.windowMs, keyed, history.spanMs, costed));
      this.windows.set(w.windowMs, kept);
      kept.chart.update(history.of(this.name, w.windowMs));
    }
    const flow = history.flowOf(this.name);
    if (t.rate !== null || t.lastWindow.length === 0) {
      this.rate = this.keep(this.rate, `${keyed}/${JSON.stringify(t.rate)}`, () => new RateChart(keyed, t.rate, history.spanMs));
      this.rate.chart.update(flow);
    } else if (this.rate) this.rate = this.drop(this.rate);
    if (t.concurrency !== null) {
      this.inFlight = this.keep(this.inFlight, `${keyed}/${costed}`, () => new InFlightChart(keyed, costed, history.spanMs));
      this.inFlight.chart.update(flow);
    } else if (this.inFlight) this.inFlight = this.drop(this.inFlight);
  }

  private keep<C extends { element: HTMLElement; dispose(): void }>(kept: Kept<C> | undefined, shape: string, create: () => C): Kept<C> {
    if (kept && kept.shape === shape) return kept;
    if (kept) this.drop(kept);
    const chart = create();
    this.element.append(chart.element);
    return { chart, shape };
  }

  private drop(kept: Kept<unknown>, forget?: () => void): undefined {
    kept.chart.dispose();
    kept.chart.element.remove();
    forget?.();
    return undefined;
  }

  dispose(): void {
    for (const kept of this.windows.values()) kept.chart.dispose();
    this.rate?.chart.dispose();
    this.inFlight?.chart.dispose();
  }
}
