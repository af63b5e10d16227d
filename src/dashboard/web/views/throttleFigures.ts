import { drainEstimate, throttleDrain, throttleStartsInMs } from '../drain';
import { h } from '../dom';
import { formatCount, formatDuration, formatKey, formatLimit, formatPerSecond, formatUntil, formatWindow } from '../format';
import { bucketHref } from '../router';
import type { WirePercentile, WireThrottle } from '../../wire';
import { scrolling } from './parts';

/** Where the limits in force come from: declarations, an override, pauses, a recovery hold, a cost. */
export function sources(t: WireThrottle): HTMLElement {
  const lines: HTMLElement[] = [];
  const override = t.overrides.throttle;
  lines.push(h('li', { 'data-field': 'limitSource' }, override
    ? `override (setLimits) ${override.until === null ? 'until cleared' : `lapsing ${formatUntil(override.until, t.at)}`}; declared by ${t.declaredBy} live worker(s)`
    : `declared by ${t.declaredBy} live worker(s) on ${t.queues.join(', ') || 'no queue'}`));
  if (t.cost) lines.push(h('li', { 'data-field': 'cost' }, `each job counts its cost, ${t.cost}, against every limit`));
  if (t.overrides.buckets > 0) lines.push(h('li', {}, `${formatCount(t.overrides.buckets)} bucket(s) with limits of their own`));
  if (t.paused?.all) lines.push(h('li', { class: 'warn', 'data-field': 'pausedAll' }, `every bucket paused ${formatUntil(t.paused.all.until, t.at)}`));
  if (t.paused && t.paused.buckets > 0) lines.push(h('li', { class: 'warn', 'data-field': 'pausedBuckets' }, `${formatCount(t.paused.buckets)} bucket(s) paused on their own`));
  if (t.adaptive) lines.push(adaptiveLine(t.adaptive));
  if (t.recoveryHold) lines.push(h('li', { class: 'warn', 'data-field': 'recoveryHold' }, `held after a Redis restart or failover (${t.recoveryHold.kind}) ${formatUntil(t.recoveryHold.until, t.at)}`));
  return h('ul', { class: 'sources' }, lines);
}

/** The adaptive limit: where it stands between its min and ceiling, and what 429s lowered. */
function adaptiveLine(a: NonNullable<WireThrottle['adaptive']>): HTMLElement {
  const limit = a.target === 'rate' ? 'the rate' : `the ${formatWindow(a.target)} limit`;
  const range = `between ${formatCount(a.min)} and ${formatCount(a.ceiling)}`;
  if (a.live !== null) {
    const lowered = a.live < a.ceiling;
    return h('li', { class: lowered ? 'warn' : undefined, 'data-field': 'adaptive' }, `${limit} adapts to 429s ${range}: ${lowered ? `lowered to ${formatCount(a.live)}` : 'at its ceiling'}`);
  }
  const latest = a.lowered.map((b) => `${formatKey(b.key)} ${formatCount(b.live)}`).join(', ');
  return h('li', { class: a.loweredBuckets > 0 ? 'warn' : undefined, 'data-field': 'adaptive' }, a.loweredBuckets === 0
    ? `${limit} adapts to 429s ${range}: every bucket at its ceiling`
    : `${limit} adapts to 429s ${range}: ${formatCount(a.loweredBuckets)} bucket(s) lowered${latest ? ` (${latest})` : ''}`);
}

/** Each limit in force and what it counts now: the last window's deliveries, deliveries per second, jobs in flight. */
export function limitsTable(t: WireThrottle, perSecondNow: number | null): HTMLElement {
  const perBucket = t.key ? ' per bucket' : '';
  const rows = [
    ...t.lastWindow.map((w) => h('tr', {},
      h('td', {}, `${formatLimit(w)}${perBucket}`),
      h('td', { class: 'num', 'data-field': `lastWindow-${w.windowMs}` }, `${formatCount(w.delivered)} in the last ${formatWindow(w.windowMs)}${t.key ? ', all buckets' : ''}`))),
    t.rate ? h('tr', {},
      h('td', {}, `rate ${formatCount(t.rate.n)} per ${formatWindow(t.rate.perMs)}, burst ${formatCount(t.rate.burst)}${perBucket}`),
      h('td', { class: 'num', 'data-field': 'perSecond' }, perSecondNow === null ? '—' : `${formatPerSecond(perSecondNow)} delivered${t.key ? ', all buckets' : ''}`)) : null,
    t.concurrency !== null ? h('tr', {},
      h('td', {}, `concurrency ${formatCount(t.concurrency)}${perBucket}`),
      h('td', { class: 'num', 'data-field': 'inFlight' }, t.inFlight === null
        ? 'no bucket read (none waits)'
        : `${formatCount(t.inFlight.counted)} in flight${t.key ? ` in ${formatKey(t.inFlight.key)}` : ''}`)) : null,
  ];
  return scrolling(h('table', { class: 'limits' },
    h('thead', {}, h('tr', {}, h('th', {}, 'limit in force'), h('th', { class: 'num' }, 'counted now'))),
    h('tbody', {}, rows)));
}

/** A waiting bucket's drain time, at the throttle's per-bucket rate (a bucket with limits of its own may differ: its page says). */
function drainCell(t: WireThrottle, waiting: number): string {
  const estimate = drainEstimate(waiting, t.effective?.perSecond ?? null, throttleStartsInMs(t));
  if (estimate.ms !== null) return `~${formatDuration(estimate.ms)}`;
  return t.paused?.all?.until === null ? 'when resumed' : '—';
}

export function topBuckets(t: WireThrottle): HTMLElement {
  if (t.topBuckets.length === 0) return h('p', { class: 'muted', 'data-field': 'topBuckets' }, 'no bucket has jobs waiting');
  return scrolling(h('table', { class: 'top', 'data-field': 'topBuckets' },
    h('thead', {}, h('tr', {}, h('th', {}, 'waiting bucket'), h('th', { class: 'num' }, 'jobs waiting'), h('th', { class: 'num' }, 'drains in'))),
    h('tbody', {}, t.topBuckets.map((b) => h('tr', { 'data-bucket': JSON.stringify(b.key) },
      h('td', {}, h('a', { href: bucketHref(t.name, b.key) }, formatKey(b.key))),
      h('td', { class: 'num' }, formatCount(b.waiting)),
      h('td', { class: 'num', 'data-field': 'bucketDrain' }, drainCell(t, b.waiting)))))));
}

/** The backlog, and when it is gone at what the limits sustain. */
export function backlog(t: WireThrottle): HTMLElement {
  const estimate = throttleDrain(t);
  const longest = t.key && t.topBuckets[0] ? ` · the longest, ${formatKey(t.topBuckets[0].key)} (${formatCount(t.topBuckets[0].waiting)}),` : '';
  return h('p', { class: 'backlog', 'data-field': 'backlog' },
    t.waiting === 0 ? 'no backlog' : `backlog ${formatCount(t.waiting)} job(s)${longest} `,
    t.waiting === 0 ? null : h('span', { 'data-field': 'drain' }, estimate.text));
}

function percentileText(p: WirePercentile): string {
  if (p === null) return '—';
  return 'atMostMs' in p ? `≤ ${formatDuration(p.atMostMs)}` : `> ${formatDuration(p.beyondMs)}`;
}

/** How long delivered jobs were held, as the histogram's bounds say it: "at most", never a figure between them. */
export function holdTimes(t: WireThrottle): HTMLElement {
  const p = t.holdPercentiles;
  return h('div', { class: 'hold-times', 'data-field': 'holdTimes' },
    h('span', { class: 'label' }, `held before delivery (${formatCount(p.count)} delivered):`),
    h('span', {}, 'p50 ', h('b', { 'data-field': 'holdP50' }, percentileText(p.p50))),
    h('span', {}, 'p90 ', h('b', { 'data-field': 'holdP90' }, percentileText(p.p90))),
    h('span', {}, 'p99 ', h('b', { 'data-field': 'holdP99' }, percentileText(p.p99))),
    h('span', {}, 'mean ', h('b', { 'data-field': 'holdMean' }, p.meanMs === null ? '—' : formatDuration(p.meanMs))));
}
