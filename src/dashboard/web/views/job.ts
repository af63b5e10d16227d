import { getJson } from '../api';
import { fill, h } from '../dom';
import { formatKey, formatUntil } from '../format';
import { bucketHref, jobHref } from '../router';
import type { WireJob } from '../../wire';
import { scrolling } from './parts';

/** roomAt is null both when nothing holds the job and when a pause without an end does: only the second waits on a resume. */
function roomReturns(job: WireJob): string {
  // Seen from the holding buckets' own reads, later than job.at: a bucket with room now is 'now', not 'in 2 ms'.
  if (job.roomAt !== null) return ` · room returns ${formatUntil(job.roomAt, Math.max(job.at, ...job.buckets.filter((b) => b.holdsIt).map((b) => b.at)))}`;
  return job.buckets.some((b) => b.holdsIt && b.nextRoomAt === null) ? ' · room returns when resumed' : '';
}

function explanation(job: WireJob): HTMLElement[] {
  return [
    h('p', { class: 'reason', 'data-field': 'reason' }, job.reason),
    h('p', {}, `state: `, h('b', { 'data-field': 'state' }, job.state),
      roomReturns(job)),
    job.buckets.length === 0 ? h('p', { class: 'muted' }, 'it draws from no bucket') : scrolling(h('table', { class: 'limits' },
      h('thead', {}, h('tr', {}, h('th', {}, 'throttle'), h('th', {}, 'bucket'), h('th', {}, 'counted'), h('th', {}, 'holds it back'), h('th', {}, ''))),
      h('tbody', {}, job.buckets.map((b) => h('tr', { class: b.holdsIt ? 'holds' : '' },
        h('td', {}, b.throttle),
        h('td', {}, h('a', { href: bucketHref(b.throttle, b.key) }, formatKey(b.key))),
        h('td', {}, b.limits.map((l) => `${l.counted}/${l.max}`).join(', ')),
        h('td', {}, b.bindingNow ?? 'nothing'),
        h('td', {}, b.holdsIt ? 'holds it' : '')))))),
  ];
}

/** Why a job waits (ThrottleAdmin.explainJob), looked up by queue and job id; refreshed with each update. */
export class JobView {
  readonly element: HTMLElement;
  private readonly result = h('div', { class: 'figures' });
  private reading = false;

  constructor(private readonly queue: string, private readonly id: string, queues: string[]) {
    const queueInput = h('input', { name: 'queue', value: queue, placeholder: 'queue', list: 'known-queues', required: true });
    const idInput = h('input', { name: 'id', value: id, placeholder: 'job id', required: true });
    const form = h('form', { class: 'lookup', onsubmit: (event: Event) => {
      event.preventDefault();
      location.hash = jobHref(queueInput.value.trim(), idInput.value.trim());
    } }, queueInput, idInput, h('button', { type: 'submit' }, 'Why does it wait?'),
    h('datalist', { id: 'known-queues' }, queues.map((q) => h('option', { value: q }))));
    this.element = h('section', { class: 'card job' }, h('h2', {}, 'Job lookup'), form, this.result);
    this.update();
  }

  update(): void {
    if (!this.queue || !this.id || this.reading) return;
    this.reading = true;
    getJson<WireJob>('job', { queue: this.queue, id: this.id })
      .then((job) => fill(this.result, h('h3', {}, `job ${job.jobId} of queue ${job.queue}`), explanation(job)))
      .catch((error: Error) => fill(this.result, h('p', { class: 'error', role: 'alert' }, error.message)))
      .finally(() => { this.reading = false; });
  }

  dispose(): void {}
}
