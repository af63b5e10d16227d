import uPlot from 'uplot';
import { h } from '../dom';
import type { WireSeries } from '../../wire';

const HEIGHT = 150;

/**
 * One limit's chart: deliveries inside the window at each sample against the limit's N (a step line, so an
 * override shows where it began). The element says what it draws in data-points (samples), data-last
 * (deliveries in the latest one) and data-max (N then), for people reading the DOM and for the browser tests.
 */
export class LimitChart {
  readonly element: HTMLElement;
  private readonly plotArea: HTMLElement;
  private plot: uPlot | undefined;
  private readonly onResize = () => this.plot?.setSize({ width: this.width(), height: HEIGHT });

  /** `spanMs`: how much time the x axis always shows (the history's length), so the chart does not zoom on a short one. */
  constructor(title: string, note: string | null, windowMs: number, private readonly spanMs: number) {
    this.plotArea = h('div', { class: 'plot' });
    this.element = h('figure', { class: 'chart', 'data-window-ms': windowMs, 'data-points': 0 },
      h('figcaption', {}, title, note ? h('small', {}, note) : null),
      this.plotArea);
    window.addEventListener('resize', this.onResize);
  }

  private width(): number {
    return Math.max(240, this.plotArea.clientWidth || 420);
  }

  update(series: WireSeries): void {
    const data: uPlot.AlignedData = [series.t.map((t) => t / 1000), [...series.delivered], [...series.max]];
    if (!this.plot) {
      // Built once attached, so that it takes the width the layout gives it.
      this.plot = new uPlot({
        width: this.width(),
        height: HEIGHT,
        scales: { x: { time: true, range: (_u, _min, max) => [max - this.spanMs / 1000, max] }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.15] } },
        series: [
          {},
          { label: 'in the window', stroke: '#2563eb', width: 2, fill: 'rgba(37, 99, 235, 0.08)' },
          { label: 'limit', stroke: '#dc2626', width: 1.5, dash: [6, 4], paths: uPlot.paths.stepped?.({ align: 1 }) },
        ],
        axes: [{ stroke: '#64748b' }, { stroke: '#64748b', size: 50 }],
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
      }, data, this.plotArea);
    } else {
      this.plot.setData(data);
    }
    const last = series.t.length - 1;
    this.element.setAttribute('data-points', String(series.t.length));
    this.element.setAttribute('data-last', last >= 0 ? String(series.delivered[last]) : '');
    this.element.setAttribute('data-max', last >= 0 ? String(series.max[last]) : '');
  }

  dispose(): void {
    window.removeEventListener('resize', this.onResize);
    this.plot?.destroy();
  }
}
