import { InvalidThrottleError } from '../errors/InvalidThrottleError';

/** A window as the API accepts it: milliseconds, or a string such as '250ms', '1s', '1m', '1h', '1d'. */
export type WindowInput = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const WINDOW_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

export function parseWindowMs(window: WindowInput, where: string): number {
  let ms: number;
  if (typeof window === 'number') {
    ms = window;
  } else if (typeof window === 'string') {
    const match = WINDOW_PATTERN.exec(window);
    if (!match) {
      throw new InvalidThrottleError(
        `${where}: window ${JSON.stringify(window)} is not a duration: write milliseconds (1000) or a number with a unit ms, s, m, h or d ('250ms', '1s', '1m').`,
      );
    }
    ms = Number(match[1]) * UNIT_MS[match[2]];
  } else {
    throw new InvalidThrottleError(`${where}: window ${String(window)} must be milliseconds or a string such as '1s'.`);
  }
  if (!Number.isFinite(ms) || !Number.isInteger(ms) || ms < 1) {
    throw new InvalidThrottleError(
      `${where}: window ${JSON.stringify(window)} is ${ms} ms; a window must be a whole number of milliseconds, at least 1 ms.`,
    );
  }
  return ms;
}

/** The shortest exact spelling of a window, for messages ('1s', '90s', '1500ms'). */
export function formatWindow(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
