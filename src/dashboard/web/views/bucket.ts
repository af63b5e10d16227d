import { getJson } from '../api';
import { bucketDrain } from '../drain';
import { fill, h } from '../dom';
import { formatCount, formatKey, formatLimit, formatUntil, formatWindow } from '../format';
import { jobHref } from '../router';
import type { WireBucket, WireBucketPage, WireKeyValue, WireOverview } from '../../wire';
import { scrolling, stat, STATE_TEXT } from './parts';
import { ThrottleControls } from './writeControls';

function countsTable(b: WireBucket): HTMLElement {
  const rows = [
    ...b.limits.map((l) => h('tr', { 'data-window-ms': l.windowMs },
      h('td', {}, formatLimit(l)),
      h('td', { class: 'num', 'data-field': 'counted' }, `${formatCount(l.counted)}/${formatCount(l.max)}`),
      h('td', {}, l.roomAt === null ? 'has room' : `room ${formatUntil(l.roomAt, b.at)}`))),
    b.rate ? h('tr', { 'data-field': 'rate' },
      h('td', {}, `rate ${formatCount(b.rate.n)} per ${formatWindow(b.rate.perMs)}, burst ${formatCount(b.rate.burst)}`),
      h('td', { class: 'num' }, `${formatCount(b.rate.room)} may go now`),
      h('td', {}, b.rate.roomAt === null ? 'has room' : `next token ${formatUntil(b.rate.roomAt, b.at)}`)) : null,
    b.inFlight ? h('tr', { 'data-field': 'inFlight' },
      h('td', {}, `concurrency ${formatCount(b.inFlight.max)}`),
      h('td', { class: 'num' }, `${formatCount(b.inFlight.counted)}/${formatCount(b.inFlight.max)} in flight`),
      h('td', {}, b.inFlight.leased > 0 ? `${formatCount(b.inFlight.leased)} held by leased workers` : '')) : null,
  ];
  return scrolling(h('table', { class: 'limits' },
    h('thead', {}, h('tr', {}, h('th', {}, 'limit'), h('th', { class: 'num' }, 'counted now'), h('th', {}, 'room'))),
    h('tbody', {}, rows)));
}

/** When room returns: nextRoomAt counts a pause with an end in; one without an end has no time to show. */
function roomReturns(b: WireBucket): string {
  if (b.nextRoomAt === null) return 'when resumed';
  return b.nextRoomAt > b.at ? formatUntil(b.nextRoomAt, b.at) : 'now';
}

function summary(b: WireBucket): (HTMLElement | null)[] {
  return [
    h('div', { class: 'stats' },
      stat('waiting', 'jobs waiting', b.waiting),
      stat('bindingNow', 'holds it back', b.bindingNow ?? 'nothing'),
      stat('roomReturns', 'room returns', roomReturns(b)),
      stat('paused', 'paused', b.paused ? `paused ${formatUntil(b.paused.until, b.at)}` : 'no'),
      stat('limitSource', 'limits from', b.limitSource),
      b.adaptive ? stat('adaptive', 'adaptive limit', `${formatCount(b.adaptive.live)} of ${formatCount(b.adaptive.ceiling)}${b.adaptive.loweredAt === null ? '' : ', lowered by a 429'}`) : null),
    b.waiting === 0 ? null : h('p', { class: 'backlog', 'data-field': 'backlog' }, `backlog ${formatCount(b.waiting)} job(s) `, h('span', { 'data-field': 'drain' }, bucketDrain(b).text)),
  ];
}

function jobsList(page: WireBucketPage): HTMLElement {
  if (page.jobs.length === 0) return h('p', { class: 'muted', 'data-field': 'jobs' }, 'no job waits on this bucket');
  return h('div', { 'data-field': 'jobs' }, page.jobs.map((q) => h('div', { class: 'jobs', 'data-queue': q.queue },
    h('h3', {}, `queue ${q.queue}: ${q.complete ? '' : 'at least '}${formatCount(q.total)} waiting`, q.ids.length < q.total ? ` (the first ${q.ids.length})` : ''),
    h('ul', { class: 'ids' }, q.ids.map((id) => h('li', {}, h('a', { href: jobHref(q.queue, id), 'data-job': id }, id)))))));
}

/**
 * One bucket: its state (colour and data-state), counted per limit, rate, in flight, its backlog and when it
 * drains, its waiting jobs and when room returns; refreshed with each update.
 */
export class BucketView {
  readonly element: HTMLElement;
  private readonly badge = h('span', { class: 'badge', 'data-field': 'state' });
  private readonly title = h('span', { class: 'name' });
  private readonly body = h('div', { class: 'figures' }, h('p', { class: 'muted' }, 'reading…'));
  private readonly key: WireKeyValue[] | null;
  private readonly controls: ThrottleControls | undefined;
  private reading = false;
  /** Whether the throttle pauses every bucket (from the overview): the bucket's Resume would not lift that. */
  private throttlePaused = false;

  constructor(private readonly throttle: string, private readonly keyText: string | null, writes: boolean) {
    this.key = keyText === null ? null : (JSON.parse(keyText) as WireKeyValue[] | null);
    this.controls = writes ? new ThrottleControls(keyText === null ? { throttle, key: null } : { throttle, key: this.key }, 'this bucket', () => this.update()) : undefined;
    this.element = h('section', { class: 'card bucket', 'data-throttle': throttle },
      h('p', {}, h('a', { href: '#/' }, '← overview')),
      h('h2', {}, this.title, this.badge),
      this.body,
      this.controls?.element);
    this.title.textContent = `bucket ${formatKey(this.key)} of throttle ${throttle}`;
    this.update();
  }

  private show(page: WireBucketPage): void {
    // Without a key in the URL, the server answers an unkeyed throttle's one bucket (key []), which it names.
    this.title.textContent = `bucket ${formatKey(page.bucket.key)} of throttle ${this.throttle}`;
    this.element.dataset.state = page.state;
    this.badge.textContent = STATE_TEXT[page.state];
    fill(this.body, countsTable(page.bucket), summary(page.bucket), jobsList(page));
    // A bucket's own pause is lifted by its Resume; the throttle's pause of every bucket only by the throttle's.
    this.controls?.update({ paused: page.bucket.paused !== null && !this.throttlePaused, overridden: page.bucket.limitSource === 'override' });
  }

  update(overview?: WireOverview): void {
    const throttle = overview?.throttles.find((t) => t.name === this.throttle);
    if (throttle) this.throttlePaused = Boolean(throttle.paused?.all);
    if (this.reading) return;
    this.reading = true;
    getJson<WireBucketPage>('bucket', { throttle: this.throttle, ...(this.keyText === null ? {} : { key: this.keyText }) })
      .then((page) => this.show(page))
      .catch((error: Error) => fill(this.body, h('p', { class: 'error', role: 'alert' }, error.message)))
      .finally(() => { this.reading = false; });
  }

  dispose(): void {}
}
