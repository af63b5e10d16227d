import { postJson } from '../api';
import { h } from '../dom';
import { formatDuration, parseDurationMs, parseLimits } from '../format';
import type { WireKeyValue } from '../../wire';
import { ConfirmStep } from './confirmStep';

/** What a control acts on: a whole throttle (no key), or one of its buckets. */
export interface WriteTarget {
  throttle: string;
  key?: WireKeyValue[] | null;
}

/** What the server would do now, so that a control it would refuse, or that would do nothing, is not offered. */
export interface WriteOffer {
  /** A pause is in force on the target: Resume lifts it. */
  paused: boolean;
  /** Limits of its own are in force: Back to declared clears them. */
  overridden: boolean;
}

function withKey(target: WriteTarget): Record<string, unknown> {
  return 'key' in target ? { throttle: target.throttle, key: target.key } : { throttle: target.throttle };
}

/** Runs one write and says how it went on the result line; the server's message when it refuses. */
export async function runWrite(result: HTMLElement, what: string, write: () => Promise<unknown>, after: () => void): Promise<void> {
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

function refuse(result: HTMLElement, message: string): void {
  result.textContent = message;
  result.dataset.state = 'error';
}

/**
 * Pause / resume and set / clear limits of a throttle or one bucket, through the server's POST endpoints
 * (ThrottleAdmin's methods and their checks), each after a confirmation that says what it will do. Built once
 * per view and kept across refreshes, so that what someone is typing is not wiped by the next update; update()
 * shows Resume and Back to declared only where they would do something.
 */
export class ThrottleControls {
  readonly element: HTMLElement;
  private readonly resumeButton: HTMLButtonElement;
  private readonly clearButton: HTMLButtonElement;

  constructor(target: WriteTarget, label: string, after: () => void) {
    const result = h('p', { class: 'result', role: 'status', 'data-role': 'result' });
    const confirmStep = new ConfirmStep();
    const forInput = h('input', { name: 'for', placeholder: 'for 5m (empty: until resumed)', 'aria-label': 'pause for' });
    const limitsInput = h('input', { name: 'limits', placeholder: '50/1s, 1000/1m', 'aria-label': 'limits' });
    const ttlInput = h('input', { name: 'ttl', placeholder: 'for 1h (empty: until cleared)', 'aria-label': 'limits for' });
    const pause = () => {
      const forMs = parseDurationMs(forInput.value);
      if (Number.isNaN(forMs)) return refuse(result, `'${forInput.value}' is no duration: write 30s, 5m or 1h.`);
      const question = forMs === undefined
        ? `Pause ${label} of ${target.throttle} until resumed? Nothing of it is delivered until someone presses Resume.`
        : `Pause ${label} of ${target.throttle} for ${formatDuration(forMs)}?`;
      confirmStep.ask(question, () => void runWrite(result, `pause ${label}`, () => postJson('pause', { ...withKey(target), ...(forMs === undefined ? {} : { forMs }) }), after));
    };
    const setLimits = () => {
      const limits = parseLimits(limitsInput.value);
      const ttlMs = parseDurationMs(ttlInput.value);
      if (!limits) return refuse(result, `'${limitsInput.value}' is no list of limits: write N/window, such as 50/1s, 1000/1m.`);
      if (Number.isNaN(ttlMs)) return refuse(result, `'${ttlInput.value}' is no duration: write 10m or 1h.`);
      const text = limits.map((l) => `${l.max} per ${l.window}`).join(', ');
      confirmStep.ask(`Replace the limits of ${label} of ${target.throttle} with ${text} ${ttlMs === undefined ? 'until cleared' : `for ${formatDuration(ttlMs)}`}?`,
        () => void runWrite(result, `limits of ${label}`, () => postJson('limits', { ...withKey(target), limits, ...(ttlMs === undefined ? {} : { ttlMs }) }), after));
    };
    this.resumeButton = h('button', {
      type: 'button', 'data-action': 'resume', hidden: true,
      onclick: () => confirmStep.ask(`Resume ${label} of ${target.throttle}? Its waiting jobs go as its limits allow.`,
        () => void runWrite(result, `resume ${label}`, () => postJson('resume', withKey(target)), after)),
    }, 'Resume');
    this.clearButton = h('button', {
      type: 'button', 'data-action': 'clear-limits', hidden: true,
      onclick: () => confirmStep.ask(`Go back to the declared limits for ${label} of ${target.throttle}?`,
        () => void runWrite(result, `clear limits of ${label}`, () => postJson('limits/clear', withKey(target)), after)),
    }, 'Back to declared');
    this.element = h('div', { class: 'controls', 'data-controls': label },
      h('div', { class: 'row' },
        h('button', { type: 'button', 'data-action': 'pause', onclick: pause }, `Pause ${label}`),
        forInput,
        this.resumeButton),
      h('div', { class: 'row' },
        limitsInput, ttlInput,
        h('button', { type: 'button', 'data-action': 'set-limits', onclick: setLimits }, 'Set limits'),
        this.clearButton),
      confirmStep.element,
      result);
  }

  update(offer: WriteOffer): void {
    this.resumeButton.hidden = !offer.paused;
    this.clearButton.hidden = !offer.overridden;
  }
}

/**
 * Puts a queue's held jobs back in bullmq's lists (ThrottleAdmin.releaseHeld). Offered only where the server
 * would do it: jobs are held and no ThrottledWorker of the queue is live (it refuses while one runs).
 */
export function releaseControl(queue: string, after: () => void): HTMLElement {
  const result = h('span', { class: 'result', role: 'status', 'data-role': 'result' });
  const confirmStep = new ConfirmStep();
  const button = h('button', {
    type: 'button', 'data-action': 'release',
    onclick: () => confirmStep.ask(`Put the jobs held on ${queue} back in bullmq's lists? Plain workers then take them unthrottled.`,
      () => void runWrite(result, `release ${queue}`, () => postJson('release', { queue }), after)),
  }, 'Release held');
  return h('span', { class: 'release' }, button, confirmStep.element, result);
}
