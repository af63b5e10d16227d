import { fill, h } from '../dom';
import { formatCount, formatKey, formatLimit, formatUntil, formatWindow } from '../format';
import type { ClientHistory } from '../history';
import { bucketHref } from '../router';
import type { WireThrottle } from '../../wire';
import { LimitChart } from './limitChart';
import { throttleControls } from './writeControls';

function stat(field: string, label: string, value: string | number): HTMLElement {
  return h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': field }, typeof value === 'number' ? formatCount(value) : value), h('span', { class: 'label' }, label));
}

/** Where the limits in force come from: declarations, an override, pauses, a recovery hold. */
function sources(t: WireThrottle): HTMLElement[] {
  const lines: HTMLElement[] = [];
  const override = t.overrides.throttle;
  lines.push(h('li', { 'data-field': 'limitSource' }, override
    ? `override (setLimits) ${override.until === null ? 'until cleared' : `lapsing ${formatUntil(override.until, t.at)}`}; declared by ${t.declaredBy} live worker(s)`
    : `declared by ${t.declaredBy} live worker(s) on ${t.queues.join(', ') || 'no queue'}`));
  if (t.overrides.buckets > 0) lines.push(h('li', {}, `${formatCount(t.overrides.buckets)} bucket(s) with limits of their own`));
  if (t.paused?.all) lines.push(h('li', { class: 'warn', 'data-field': 'pausedAll' }, `every bucket paused ${formatUntil(t.paused.all.until, t.at)}`));
  if (t.paused && t.paused.buckets > 0) lines.push(h('li', { class: 'warn', 'data-field': 'pausedBuckets' }, `${formatCount(t.paused.buckets)} bucket(s) paused on their own`));
  if (t.recoveryHold) lines.push(h('li', { class: 'warn' }, `held after a Redis restart or failover (${t.recoveryHold.kind}) ${formatUntil(t.recoveryHold.until, t.at)}`));
  return lines;
}

function limitsTable(t: WireThrottle): HTMLElement {
  const perBucket = t.key ? ' per bucket' : '';
  const rows = [
    ...t.lastWindow.map((w) => h('tr', {},
      h('td', {}, `${formatLimit(w)}${perBucket}`),
      h('td', { class: 'num', 'data-field': `lastWindow-${w.windowMs}` }, formatCount(w.delivered)))),
    t.rate ? h('tr', {}, h('td', {}, `rate ${formatCount(t.rate.n)} per ${formatWindow(t.rate.perMs)}, burst ${formatCount(t.rate.burst)}${perBucket}`), h('td', {}, '')) : null,
    t.concurrency !== null ? h('tr', {}, h('td', {}, `concurrency ${formatCount(t.concurrency)}${perBucket}`), h('td', {}, '')) : null,
  ];
  return h('table', { class: 'limits' },
    h('thead', {}, h('tr', {}, h('th', {}, 'limit in force'), h('th', { class: 'num' }, t.key ? 'in the last window, all buckets' : 'in the last window'))),
    h('tbody', {}, rows));
}

function topBuckets(t: WireThrottle): HTMLElement {
  if (t.topBuckets.length === 0) return h('p', { class: 'muted', 'data-field': 'topBuckets' }, 'no bucket has jobs waiting');
  return h('table', { class: 'top', 'data-field': 'topBuckets' },
    h('thead', {}, h('tr', {}, h('th', {}, 'waiting bucket'), h('th', { class: 'num' }, 'jobs waiting'))),
    h('tbody', {}, t.topBuckets.map((b) => h('tr', { 'data-bucket': JSON.stringify(b.key) },
      h('td', {}, h('a', { href: bucketHref(t.name, b.key) }, formatKey(b.key))),
      h('td', { class: 'num' }, formatCount(b.waiting))))));
}

/**
 * One throttle: its limits and where they come from, a chart per limit, its buckets active and at their
 * limit, the top waiting buckets, tokens expired. The figures are redrawn on each update; the charts and the
 * write controls are built once and kept.
 */
export class ThrottleCard {
  readonly element: HTMLElement;
  private readonly figures = h('div', { class: 'figures' });
  private readonly charts = h('div', { class: 'charts' });
  private readonly chartsByWindow = new Map<number, LimitChart>();

  constructor(private readonly name: string, writes: boolean, refresh: () => void) {
    this.element = h('section', { class: 'card throttle', 'data-throttle': name },
      h('h2', {}, name),
      this.figures,
      this.charts,
      writes ? throttleControls({ throttle: name }, 'every bucket', refresh) : null);
  }

  update(t: WireThrottle, history: ClientHistory): void {
    fill(this.figures,
      h('p', { class: 'key' }, t.key ? `one bucket per ${t.key.join(' + ')}` : 'one bucket (no key)',
        t.effective ? ` · sustains ${t.effective.perSecond.toPrecision(3)}/s per bucket (${t.effective.binding})` : ''),
      h('ul', { class: 'sources' }, sources(t)),
      limitsTable(t),
      h('div', { class: 'stats' },
        stat('activeBuckets', 'buckets active', t.activeBuckets),
        stat('bucketsAtLimit', 'at their limit', t.bucketsAtLimit),
        stat('waiting', 'jobs waiting', t.waiting),
        stat('tokensExpired', 'tokens expired', t.tokensExpired),
        stat('deliveredTotal', 'delivered', t.deliveredTotal),
        stat('limitedTotal', 'jobs that waited', t.limitedTotal)),
      topBuckets(t));
    const windows = new Set(t.lastWindow.map((w) => w.windowMs));
    for (const [windowMs, chart] of this.chartsByWindow) {
      if (windows.has(windowMs)) continue;
      chart.dispose();
      chart.element.remove();
      this.chartsByWindow.delete(windowMs);
    }
    for (const w of t.lastWindow) {
      let chart = this.chartsByWindow.get(w.windowMs);
      if (chart && chart.keyed !== (t.key !== null)) {
        // Redeclared with or without a key: what the chart plots changed.
        chart.dispose();
        chart.element.remove();
        chart = undefined;
      }
      if (!chart) {
        chart = new LimitChart(w.windowMs, t.key !== null, history.spanMs);
        this.chartsByWindow.set(w.windowMs, chart);
        this.charts.append(chart.element);
      }
      chart.update(history.of(this.name, w.windowMs));
    }
  }

  dispose(): void {
    for (const chart of this.chartsByWindow.values()) chart.dispose();
  }
}
