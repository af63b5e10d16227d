import { h } from '../dom';
import { formatDuration, formatPerSecond } from '../format';
import type { WireFlowSeries } from '../../wire';
import { TimePlot } from './timePlot';

const HEIGHT = 130;

/**
 * Deliveries per second (all buckets together, over the last few samples), and for an unkeyed throttle its
 * rate's n per second as the line they must stay under: the chart of a rate, and of a throttle with no
 * window to chart. A keyed throttle's rate holds per bucket, so its total gets no line (as the window
 * charts' totals). The element says what it draws: data-points, data-last (the latest per-second figure;
 * empty for a gap), data-rate (the line's value, empty without one).
 */
export class RateChart {
  readonly element: HTMLElement;
  private readonly latest = h('p', { class: 'latest', 'data-field': 'latest' });
  private readonly plot: TimePlot;

  constructor(readonly keyed: boolean, rate: { n: number; perMs: number } | null, spanMs: number) {
    const area = h('div', { class: 'plot' });
    const lined = rate !== null && !keyed;
    this.plot = new TimePlot(area, [
      { label: keyed ? 'all buckets' : 'delivered', stroke: '#0d9488', fill: 'rgba(13, 148, 136, 0.08)', value: (v) => formatPerSecond(v) },
      ...(lined ? [{ label: 'rate', stroke: '#dc2626', width: 1.5, dash: [6, 4], stepped: true, value: (v: number) => formatPerSecond(v) }] : []),
    ], { height: HEIGHT, spanMs, fractional: true });
    const what = rate === null
      ? 'deliveries per second'
      : keyed ? 'deliveries per second, all buckets together (the rate holds per bucket: no line)' : 'deliveries per second, against its rate';
    this.element = h('figure', { class: 'chart', 'data-chart': 'rate', 'data-points': 0 },
      h('figcaption', {}, `${what} · up to the last ${formatDuration(spanMs)}`),
      area, this.latest);
  }

  update(series: WireFlowSeries): void {
    const lined = !this.keyed && series.ratePerSecond.some((v) => v !== null);
    this.plot.update(series.t, lined ? [[...series.perSecond], [...series.ratePerSecond]] : [[...series.perSecond]]);
    const last = series.t.length - 1;
    const value = last >= 0 ? series.perSecond[last] : null;
    const rate = last >= 0 ? series.ratePerSecond[last] : null;
    this.element.setAttribute('data-points', String(series.t.length));
    this.element.setAttribute('data-last', value === null ? '' : String(value));
    this.element.setAttribute('data-rate', rate === null || this.keyed ? '' : String(rate));
    this.latest.textContent = value === null ? '' : `now ${formatPerSecond(value)}${rate === null ? '' : ` · rate ${formatPerSecond(rate)}${this.keyed ? ' per bucket' : ''}`}`;
  }

  dispose(): void {
    this.plot.dispose();
  }
}
