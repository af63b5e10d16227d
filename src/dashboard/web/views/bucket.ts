import { getJson } from '../api';
import { fill, h } from '../dom';
import { formatCount, formatKey, formatLimit, formatUntil, formatWindow } from '../format';
import { jobHref } from '../router';
import type { WireBucket, WireBucketPage, WireKeyValue } from '../../wire';
import { throttleControls } from './writeControls';

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
  return h('table', { class: 'limits' },
    h('thead', {}, h('tr', {}, h('th', {}, 'limit'), h('th', { class: 'num' }, 'counted now'), h('th', {}, 'room'))),
    h('tbody', {}, rows));
}

/** When room returns: nextRoomAt counts a pause with an end in; one without an end has no time to show. */
function roomReturns(b: WireBucket): string {
  if (b.nextRoomAt === null) return 'when resumed';
  return b.nextRoomAt > b.at ? formatUntil(b.nextRoomAt, b.at) : 'now';
}

function summary(b: WireBucket): HTMLElement {
  return h('div', { class: 'stats' },
    h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': 'waiting' }, formatCount(b.waiting)), h('span', { class: 'label' }, 'jobs waiting')),
    h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': 'bindingNow' }, b.bindingNow ?? 'nothing'), h('span', { class: 'label' }, 'holds it back')),
    h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': 'roomReturns' }, roomReturns(b)), h('span', { class: 'label' }, 'room returns')),
    h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': 'paused' }, b.paused ? `paused ${formatUntil(b.paused.until, b.at)}` : 'no'), h('span', { class: 'label' }, 'paused')),
    h('div', { class: 'stat' }, h('span', { class: 'value', 'data-field': 'limitSource' }, b.limitSource), h('span', { class: 'label' }, 'limits from')));
}

function jobsList(page: WireBucketPage): HTMLElement {
  if (page.jobs.length === 0) return h('p', { class: 'muted', 'data-field': 'jobs' }, 'no job waits on this bucket');
  return h('div', { 'data-field': 'jobs' }, page.jobs.map((q) => h('div', { class: 'jobs', 'data-queue': q.queue },
    h('h3', {}, `queue ${q.queue}: ${q.complete ? '' : 'at least '}${formatCount(q.total)} waiting`, q.ids.length < q.total ? ` (the first ${q.ids.length})` : ''),
    h('ul', { class: 'ids' }, q.ids.map((id) => h('li', {}, h('a', { href: jobHref(q.queue, id), 'data-job': id }, id)))))));
}

/** One bucket: counted per limit, rate, in flight, its waiting jobs and when room returns; refreshed with each update. */
export class BucketView {
  readonly element: HTMLElement;
  private readonly body = h('div', { class: 'figures' }, h('p', { class: 'muted' }, 'reading…'));
  private readonly key: WireKeyValue[] | null;
  private reading = false;

  constructor(private readonly throttle: string, private readonly keyText: string | null, writes: boolean) {
    this.key = keyText === null ? null : (JSON.parse(keyText) as WireKeyValue[] | null);
    this.element = h('section', { class: 'card bucket', 'data-throttle': throttle },
      h('p', {}, h('a', { href: '#/' }, '← overview')),
      h('h2', {}, `bucket ${formatKey(this.key)} of throttle ${throttle}`),
      this.body,
      writes ? throttleControls(keyText === null ? { throttle, key: null } : { throttle, key: this.key }, 'this bucket', () => this.update()) : null);
    this.update();
  }

  update(): void {
    if (this.reading) return;
    this.reading = true;
    getJson<WireBucketPage>('bucket', { throttle: this.throttle, ...(this.keyText === null ? {} : { key: this.keyText }) })
      .then((page) => fill(this.body, countsTable(page.bucket), summary(page.bucket), jobsList(page)))
      .catch((error: Error) => fill(this.body, h('p', { class: 'error', role: 'alert' }, error.message)))
      .finally(() => { this.reading = false; });
  }

  dispose(): void {}
}
