import { fill, h } from '../dom';
import { formatPerSecond } from '../format';
import type { ClientHistory } from '../history';
import type { WireThrottle } from '../../wire';
import { ThrottleCharts } from './throttleCharts';
import { stat, STATE_TEXT } from './parts';
import { backlog, holdTimes, limitsTable, sources, topBuckets } from './throttleFigures';
import { ThrottleControls } from './writeControls';

/**
 * One throttle: its state (the card's colour, and data-state for the DOM's readers), its limits and where they
 * come from, a chart per limit kind, its buckets active and at their limit, its backlog and when it drains,
 * how long delivered jobs were held, the top waiting buckets. The figures are redrawn on each update; the
 * charts and the write controls are built once and kept.
 */
export class ThrottleCard {
  readonly element: HTMLElement;
  private readonly badge = h('span', { class: 'badge', 'data-field': 'state' });
  private readonly figures = h('div', { class: 'figures' });
  private readonly charts: ThrottleCharts;
  private readonly controls: ThrottleControls | undefined;

  constructor(name: string, writes: boolean, refresh: () => void) {
    this.charts = new ThrottleCharts(name);
    this.controls = writes ? new ThrottleControls({ throttle: name }, 'every bucket', refresh) : undefined;
    this.element = h('section', { class: 'card throttle', 'data-throttle': name },
      h('h2', {}, h('span', { class: 'name' }, name), this.badge),
      this.figures,
      this.charts.element,
      this.controls?.element);
  }

  update(t: WireThrottle, history: ClientHistory): void {
    this.element.dataset.state = t.state;
    this.badge.textContent = STATE_TEXT[t.state];
    const flow = history.flowOf(t.name);
    const perSecondNow = flow.perSecond.length > 0 ? flow.perSecond[flow.perSecond.length - 1] : null;
    fill(this.figures,
      h('p', { class: 'key' }, t.key ? `one bucket per ${t.key.join(' + ')}` : 'one bucket (no key)',
        t.effective ? ` · sustains ${formatPerSecond(t.effective.perSecond)} per bucket (${t.effective.binding})` : ''),
      sources(t),
      limitsTable(t, perSecondNow),
      h('div', { class: 'stats' },
        stat('activeBuckets', 'buckets active', t.activeBuckets),
        stat('bucketsAtLimit', 'at their limit', t.bucketsAtLimit),
        stat('waiting', 'jobs waiting', t.waiting),
        stat('deliveredTotal', 'delivered', t.deliveredTotal),
        stat('limitedTotal', 'jobs that waited', t.limitedTotal, 'jobs that had to wait on a full bucket of this throttle, each counted once, when it started waiting'),
        stat('tokensExpired', 'tokens expired', t.tokensExpired)),
      backlog(t),
      holdTimes(t),
      topBuckets(t));
    this.charts.update(t, history);
    this.controls?.update({ paused: t.paused !== null, overridden: t.limitSource === 'override' || t.overrides.buckets > 0 });
  }

  dispose(): void {
    this.charts.dispose();
  }
}
