import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { windowTextMs } from './windowText';

/** A window as the API accepts it: milliseconds, or a string such as '250ms', '1s', '1m', '1h', '1d'. */
export type WindowInput = number | string;


export function parseWindowMs(window: WindowInput, where: string): number {
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
