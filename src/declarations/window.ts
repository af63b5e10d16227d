import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { windowTextMs } from './windowText';

/** The units a window's text may carry: milliseconds, seconds, minutes, hours, days. */
export type WindowUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/**
 * A window as text: a number and a unit, '250ms', '1s', '1.5m', '1 h' (what windowTextMs reads), so that a
 * misspelling such as '1 sec' is a compile error, not a throw at run time.
 */
export type WindowText = `${number}${WindowUnit}` | `${number} ${WindowUnit}`;

/**
 * A window as the API accepts it: milliseconds, or text such as '250ms', '1s', '1m', '1h', '1d'. Text typed as a
 * plain `string` (read from configuration) can be checked first with `isWindowText`.
 */
export type WindowInput = number | WindowText;

/** Whether `text` spells a window the API accepts: narrows a string read at run time to WindowText. */
export function isWindowText(text: string): text is WindowText {
  return windowTextMs(text) !== undefined;
}

/** The window's ms; throws InvalidThrottleError naming `where` for text that spells none (JavaScript callers, casts). */
export function parseWindowMs(window: WindowInput | string, where: string): number {
  let ms: number;
  if (typeof window === 'number') {
    ms = window;
  } else if (typeof window === 'string') {
    const spelled = windowTextMs(window);
    if (spelled === undefined) {
      throw new InvalidThrottleError(
        `${where}: window ${JSON.stringify(window)} is not a duration: write milliseconds (1000) or a number with a unit ms, s, m, h or d ('250ms', '1s', '1m').`,
      );
    }
    ms = spelled;
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

export { formatWindow } from './windowText';
