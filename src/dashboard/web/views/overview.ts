import { fill, h } from '../dom';
import { formatCount, formatDuration, formatKey } from '../format';
import type { ClientHistory } from '../history';
import type { WireOverview, WireQueue } from '../../wire';
import { ThrottleCard } from './throttleCard';
import { scrolling, STATE_TEXT } from './parts';
import { releaseControl } from './writeControls';

/** The colours' key, once above the cards. */
function stateLegend(): HTMLElement {
  return h('ul', { class: 'legend', 'aria-label': 'states' },
    (Object.keys(STATE_TEXT) as (keyof typeof STATE_TEXT)[]).map((state) => h('li', { 'data-state': state }, h('span', { class: 'swatch' }), STATE_TEXT[state])));
}

/** releaseHeld refuses while a ThrottledWorker of the queue is live, and has nothing to do with nothing held. */
function releasable(q: WireQueue): boolean {
  return q.throttledWorkers === 0 && q.throttled > 0;
}

/** ' · fair shares: acme 50% (×2), bigco 33% … of 3 groups', under the bullmq counts; nothing without fairness. */
function fairShares(q: WireQueue): HTMLElement | null {
  const fair = q.fairness;
  if (!fair || fair.delivered === 0) return null;
  const top = fair.top.slice(0, 3).map((g) => `${formatKey(g.key)} ${Math.round(g.share * 100)}%${g.weight !== 1 ? ` (×${g.weight})` : ''}`);
  return h('div', { 'data-field': 'fairShares' }, `fair shares by ${fair.key}: ${top.join(', ')}${fair.groups > top.length ? ` … of ${formatCount(fair.groups)} groups` : ''}`);
}

/** `release`: the queue's release control where writes are on (null where it is not offered), undefined where they are off. */
function queueRow(q: WireQueue, release: HTMLElement | null | undefined): HTMLElement {
  const counts = ['wait', 'prioritized', 'active', 'delayed', 'completed', 'failed']
    .filter((state) => (q.counts[state] ?? 0) > 0)
    .map((state) => `${state} ${formatCount(q.counts[state])}`).join(' · ');
  return h('tr', { 'data-queue': q.queue },
    h('td', {}, q.queue),
    h('td', { class: 'num', 'data-field': 'throttled' }, formatCount(q.throttled)),
    h('td', { class: 'num', 'data-field': 'heldByFullBuckets' }, formatCount(q.heldByFullBuckets)),
    h('td', { class: 'num', 'data-field': 'oldestHeld' }, q.oldestHeldMs === null ? '—' : formatDuration(q.oldestHeldMs)),
    h('td', {}, `${q.throttledWorkers} throttled${q.plainWorkers ? `, ${q.plainWorkers} plain (unthrottled!)` : ''}`),
    h('td', { class: 'muted' }, counts || 'no jobs', fairShares(q)),
    release === undefined ? null : h('td', {}, release));
}

/**
 * Every queue (held jobs, the oldest one's age) and every throttle (a card each). Queue rows are redrawn on
 * each update; each release control is kept while its queue is shown.
 */
export class OverviewView {
  readonly element: HTMLElement;
  private readonly queueBody = h('tbody', {});
  private readonly throttleList = h('div', { class: 'throttles' });
  private readonly cards = new Map<string, ThrottleCard>();
  private readonly releases = new Map<string, HTMLElement>();
  private readonly header: HTMLElement;

  constructor(private readonly history: ClientHistory, private readonly writes: boolean, private readonly refresh: () => void) {
    this.header = h('tr', {}, h('th', {}, 'queue'), h('th', { class: 'num' }, 'held'), h('th', { class: 'num' }, 'by full buckets'),
      h('th', { class: 'num' }, 'oldest waiting'), h('th', {}, 'workers'), h('th', {}, 'bullmq'), writes ? h('th', {}, '') : null);
    this.element = h('div', { class: 'overview' },
      h('section', { class: 'card' }, h('h2', {}, 'Queues'), scrolling(h('table', { class: 'queues' }, h('thead', {}, this.header), this.queueBody))),
      h('div', { class: 'throttles-head' }, h('h2', {}, 'Throttles'), stateLegend()),
      this.throttleList);
  }

  update(overview: WireOverview): void {
    fill(this.queueBody, overview.queues.length > 0
      ? overview.queues.map((q) => queueRow(q, this.writes ? (releasable(q) ? this.releaseOf(q.queue) : null) : undefined))
      : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'no queue with a live ThrottledWorker')));
    const names = new Set(overview.throttles.map((t) => t.name));
    for (const [name, card] of this.cards) {
      if (names.has(name)) continue;
      card.dispose();
      card.element.remove();
      this.cards.delete(name);
    }
    if (overview.throttles.length === 0) fill(this.throttleList, h('p', { class: 'muted' }, 'no throttle in effect (no live ThrottledWorker declares one)'));
    else this.throttleList.querySelector(':scope > p.muted')?.remove();
    for (const t of overview.throttles) {
      let card = this.cards.get(t.name);
      if (!card) {
        card = new ThrottleCard(t.name, this.writes, this.refresh);
        this.cards.set(t.name, card);
        this.throttleList.append(card.element);
      }
      card.update(t, this.history);
    }
  }

  private releaseOf(queue: string): HTMLElement {
    let control = this.releases.get(queue);
    if (!control) {
      control = releaseControl(queue, this.refresh);
      this.releases.set(queue, control);
    }
    return control;
  }

  dispose(): void {
    for (const card of this.cards.values()) card.dispose();
  }
}
