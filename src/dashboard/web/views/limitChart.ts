import { h } from '../dom';
import { formatCount, formatDuration, formatKey, formatWindow } from '../format';
import type { WireKeyValue, WireSeries } from '../../wire';
import { TimePlot } from './timePlot';

const HEIGHT = 150;
const TOTAL_HEIGHT = 100;

function keyText(json: string | null): string {
  return json === null ? '' : formatKey(JSON.parse(json) as WireKeyValue[] | null);
}

function peak(values: readonly (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length > 0 ? Math.max(...known) : null;
}

/**
 * One limit's chart: a bucket's deliveries inside the window at each sample against the limit's N (a step line,
 * so an override shows where it began). For a keyed throttle the bucket is the busiest of the top waiting ones
 * (a gap where none waits), and the deliveries of all buckets together get a small figure of their own, on
 * their own scale and without the N line: the limit holds per bucket, so a total above N is no breach.
 * The element says what it draws, for people reading the DOM and for the browser tests: data-points (samples),
 * data-first (the first sample's time, ms),
 * data-last (the per-bucket figure of the latest one; empty for a gap), data-peak (the highest per-bucket
 * figure drawn), data-max (N then), data-busiest-key (the latest busiest bucket's key, JSON); the all-buckets
 * figure (figure.chart-total) has its own data-last and data-peak.
 */
export class LimitChart {
  readonly element: HTMLElement;
  private readonly latest = h('p', { class: 'latest', 'data-field': 'latest' });
  private readonly perBucket: TimePlot;
  private readonly total: { element: HTMLElement; latest: HTMLElement; plot: TimePlot } | undefined;
  private keys: (string | null)[] = [];

  /** `costed`: jobs count their cost against the limit, so the per-bucket figure is in units, not deliveries. */
  constructor(windowMs: number, readonly keyed: boolean, spanMs: number, readonly costed: boolean) {
    const window = formatWindow(windowMs);
    const span = formatDuration(spanMs);
    const counted = costed ? 'units (costs)' : 'deliveries';
    const perBucketArea = h('div', { class: 'plot' });
    this.perBucket = new TimePlot(perBucketArea, [
      keyed
        ? { label: 'busiest waiting bucket', stroke: '#2563eb', fill: 'rgba(37, 99, 235, 0.08)', value: (v, i) => `${formatCount(v)} (${keyText(this.keys[i] ?? null)})` }
        : { label: 'in the window', stroke: '#2563eb', fill: 'rgba(37, 99, 235, 0.08)' },
      { label: keyed ? 'limit per bucket' : 'limit', stroke: '#dc2626', width: 1.5, dash: [6, 4], stepped: true },
    ], { height: HEIGHT, spanMs });
    if (keyed) {
      const area = h('div', { class: 'plot' });
      const latest = h('p', { class: 'latest', 'data-field': 'latest' });
      const element = h('figure', { class: 'chart-total', 'data-points': 0 },
        h('figcaption', {}, `all buckets together, deliveries in the last ${window}`, h('small', {}, 'their total, not held to the per-bucket limit: no N line')),
        area, latest);
      this.total = { element, latest, plot: new TimePlot(area, [{ label: 'all buckets', stroke: '#64748b', width: 1.5, fill: 'rgba(100, 116, 139, 0.08)' }], { height: TOTAL_HEIGHT, spanMs, ySpace: 20 }) };
    }
    this.element = h('figure', { class: 'chart', 'data-window-ms': windowMs, 'data-points': 0 },
      h('figcaption', {},
        keyed ? `the busiest bucket's ${counted} in the last ${window}, against the per-bucket limit · up to the last ${span}` : `${counted} in the last ${window}, against its limit · up to the last ${span}`,
        keyed ? h('small', {}, 'the busiest of the (up to 3) buckets with the most jobs waiting; a gap where none waits, since the busiest is then unknown without reading every bucket') : null),
      perBucketArea,
      this.latest,
      this.total?.element);
  }

  update(series: WireSeries): void {
    const plotted = this.keyed ? series.busiest : series.delivered;
    this.keys = series.busiestKey;
    this.perBucket.update(series.t, [[...plotted], [...series.max]]);
    const last = series.t.length - 1;
    const lastValue = last >= 0 ? plotted[last] : null;
    const highest = peak(plotted);
    this.element.setAttribute('data-points', String(series.t.length));
    this.element.setAttribute('data-first', last >= 0 ? String(series.t[0]) : '');
    this.element.setAttribute('data-last', lastValue === null ? '' : String(lastValue));
    this.element.setAttribute('data-peak', highest === null ? '' : String(highest));
    this.element.setAttribute('data-max', last >= 0 ? String(series.max[last]) : '');
    this.element.setAttribute('data-busiest-key', last >= 0 ? series.busiestKey[last] ?? '' : '');
    if (last < 0) this.latest.textContent = '';
    else if (!this.keyed) this.latest.textContent = `now ${formatCount(series.delivered[last])} of ${formatCount(series.max[last])}`;
    else this.latest.textContent = lastValue === null
      ? 'now: no bucket has jobs waiting'
      : `now: ${keyText(series.busiestKey[last])}, ${formatCount(lastValue)} of ${formatCount(series.max[last])}`;
    if (this.total) {
      this.total.plot.update(series.t, [[...series.delivered]]);
      const totalPeak = peak(series.delivered);
      this.total.element.setAttribute('data-points', String(series.t.length));
      this.total.element.setAttribute('data-last', last >= 0 ? String(series.delivered[last]) : '');
      this.total.element.setAttribute('data-peak', totalPeak === null ? '' : String(totalPeak));
      this.total.latest.textContent = last >= 0 ? `now ${formatCount(series.delivered[last])} in all` : '';
    }
  }

  dispose(): void {
    this.perBucket.dispose();
    this.total?.plot.dispose();
  }
}
