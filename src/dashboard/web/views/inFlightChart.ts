import { h } from '../dom';
import { formatCount, formatDuration, formatKey } from '../format';
import type { WireFlowSeries, WireKeyValue } from '../../wire';
import { TimePlot } from './timePlot';

const HEIGHT = 130;

function keyText(json: string | null): string {
  return json === null ? '' : formatKey(JSON.parse(json) as WireKeyValue[] | null);
}

/**
 * A concurrency's chart: units in flight in a bucket against its max (a step line). For a keyed throttle, the
 * busiest of its top waiting buckets, named in the legend, and a gap where none waits (unknown without reading
 * every bucket). The element says what it draws: data-points, data-last (empty for a gap), data-max.
 */
export class InFlightChart {
  readonly element: HTMLElement;
  private readonly latest = h('p', { class: 'latest', 'data-field': 'latest' });
  private readonly plot: TimePlot;
  private keys: (string | null)[] = [];

  constructor(readonly keyed: boolean, costed: boolean, spanMs: number) {
    const area = h('div', { class: 'plot' });
    const counted = costed ? 'units in flight (costs)' : 'jobs in flight';
    this.plot = new TimePlot(area, [
      keyed
        ? { label: 'busiest waiting bucket', stroke: '#7c3aed', fill: 'rgba(124, 58, 237, 0.08)', value: (v, i) => `${formatCount(v)} (${keyText(this.keys[i] ?? null)})` }
        : { label: 'in flight', stroke: '#7c3aed', fill: 'rgba(124, 58, 237, 0.08)' },
      { label: 'concurrency', stroke: '#dc2626', width: 1.5, dash: [6, 4], stepped: true },
    ], { height: HEIGHT, spanMs });
    this.element = h('figure', { class: 'chart', 'data-chart': 'in-flight', 'data-points': 0 },
      h('figcaption', {}, keyed ? `the busiest bucket's ${counted}, against its concurrency` : `${counted}, against its concurrency`,
        ` · up to the last ${formatDuration(spanMs)}`,
        keyed ? h('small', {}, 'the busiest of the (up to 3) buckets with the most jobs waiting; a gap where none waits') : null),
      area, this.latest);
  }

  update(series: WireFlowSeries): void {
    this.keys = series.inFlightKey;
    this.plot.update(series.t, [[...series.inFlight], [...series.inFlightMax]]);
    const last = series.t.length - 1;
    const value = last >= 0 ? series.inFlight[last] : null;
    const max = last >= 0 ? series.inFlightMax[last] : null;
    this.element.setAttribute('data-points', String(series.t.length));
    this.element.setAttribute('data-last', value === null ? '' : String(value));
    this.element.setAttribute('data-max', max === null ? '' : String(max));
    if (last < 0) this.latest.textContent = '';
    else if (value === null) this.latest.textContent = 'now: no bucket has jobs waiting';
    else this.latest.textContent = `now${this.keyed ? `: ${keyText(series.inFlightKey[last])},` : ''} ${formatCount(value)} of ${formatCount(max ?? 0)}`;
  }

  dispose(): void {
    this.plot.dispose();
  }
}
