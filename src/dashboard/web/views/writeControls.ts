import { postJson } from '../api';
import { h } from '../dom';
import { parseDurationMs, parseLimits } from '../format';
import type { WireKeyValue } from '../../wire';

/** What a control acts on: a whole throttle (no key), or one of its buckets. */
export interface WriteTarget {
  throttle: string;
  key?: WireKeyValue[] | null;
}

function withKey(target: WriteTarget): Record<string, unknown> {
  return 'key' in target ? { throttle: target.throttle, key: target.key } : { throttle: target.throttle };
}

/** Runs one write and says how it went on the result line; the server's message when it refuses. */
async function run(result: HTMLElement, what: string, write: () => Promise<unknown>, after: () => void): Promise<void> {
  result.textContent = `${what}…`;
  result.dataset.state = 'pending';
  try {
    await write();
    result.textContent = `${what}: done`;
    result.dataset.state = 'ok';
    after();
  } catch (error) {
    result.textContent = `${what}: ${(error as Error).message}`;
    result.dataset.state = 'error';
  }
}

/**
 * Pause / resume and set / clear limits of a throttle or one bucket, through the server's POST endpoints
 * (ThrottleAdmin's methods and their checks). Built once per view and kept across refreshes, so that what
 * someone is typing is not wiped by the next update.
 */
export function throttleControls(target: WriteTarget, label: string, after: () => void): HTMLElement {
  const result = h('p', { class: 'result', role: 'status', 'data-role': 'result' });
  const forInput = h('input', { name: 'for', placeholder: 'for 5m (empty: until resumed)', size: 26 });
  const limitsInput = h('input', { name: 'limits', placeholder: '50/1s, 1000/1m', size: 18 });
  const ttlInput = h('input', { name: 'ttl', placeholder: 'for 1h (empty: until cleared)', size: 26 });
  const pause = () => {
    const forMs = parseDurationMs(forInput.value);
    if (Number.isNaN(forMs)) return void (result.textContent = `'${forInput.value}' is no duration: write 30s, 5m or 1h.`);
    void run(result, `pause ${label}`, () => postJson('pause', { ...withKey(target), ...(forMs === undefined ? {} : { forMs }) }), after);
  };
  const setLimits = () => {
    const limits = parseLimits(limitsInput.value);
    const ttlMs = parseDurationMs(ttlInput.value);
    if (!limits) return void (result.textContent = `'${limitsInput.value}' is no list of limits: write N/window, such as 50/1s, 1000/1m.`);
    if (Number.isNaN(ttlMs)) return void (result.textContent = `'${ttlInput.value}' is no duration: write 10m or 1h.`);
    void run(result, `limits of ${label}`, () => postJson('limits', { ...withKey(target), limits, ...(ttlMs === undefined ? {} : { ttlMs }) }), after);
  };
  return h('div', { class: 'controls', 'data-controls': label },
    h('div', { class: 'row' },
      h('button', { type: 'button', 'data-action': 'pause', onclick: pause }, `Pause ${label}`),
      forInput,
      h('button', { type: 'button', 'data-action': 'resume', onclick: () => void run(result, `resume ${label}`, () => postJson('resume', withKey(target)), after) }, 'Resume')),
    h('div', { class: 'row' },
      limitsInput, ttlInput,
      h('button', { type: 'button', 'data-action': 'set-limits', onclick: setLimits }, 'Set limits'),
      h('button', { type: 'button', 'data-action': 'clear-limits', onclick: () => void run(result, `clear limits of ${label}`, () => postJson('limits/clear', withKey(target)), after) }, 'Back to declared')),
    result);
}

/** Puts a queue's held jobs back in bullmq's lists (ThrottleAdmin.releaseHeld: refused while a ThrottledWorker runs). */
export function releaseControl(queue: string, after: () => void): HTMLElement {
  const result = h('span', { class: 'result', role: 'status', 'data-role': 'result' });
  const button = h('button', {
    type: 'button', 'data-action': 'release',
    onclick: () => {
      if (!confirm(`Put the jobs held on ${queue} back in bullmq's lists? Plain workers then take them unthrottled.`)) return;
      void run(result, `release ${queue}`, () => postJson('release', { queue }), after);
    },
  }, 'Release held');
  return h('span', { class: 'release' }, button, result);
}
