import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { Limit } from './Limit';
import { formatWindow } from './window';

function describe(limit: Limit): string {
  return `${limit.max} per ${formatWindow(limit.windowMs)}`;
}

/**
 * The most deliveries a window of `longMs` can hold when `short` is the only constraint:
 * bursts of short.max at 0, W, 2W, ... fit ceil(longMs / W) of them.
 */
export function mostInWindowGiven(short: Limit, longMs: number): number {
  return short.max * Math.ceil(longMs / short.windowMs);
}

/**
 * Rejects a pair of limits within one declaration where one can never deny a delivery,
 * since that is almost certainly a mistake (the design's "limit that can never apply").
 */
export function checkLimitPair(throttle: string, a: Limit, b: Limit): void {
  if (a.windowMs === b.windowMs) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': limits ${describe(a)} and ${describe(b)} have the same window; keep one limit per window (the stricter is ${describe(a.max <= b.max ? a : b)}).`,
    );
  }
  const [short, long] = a.windowMs < b.windowMs ? [a, b] : [b, a];
  if (short.max >= long.max) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': limit ${describe(short)} can never apply alongside ${describe(long)}: at most ${long.max} can ever go in ${formatWindow(short.windowMs)}. Lower ${describe(short)} below ${long.max} or remove it.`,
    );
  }
  const most = mostInWindowGiven(short, long.windowMs);
  if (long.max >= most) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': limit ${describe(long)} can never apply alongside ${describe(short)}: ${describe(short)} allows at most ${most} per ${formatWindow(long.windowMs)}. Lower ${describe(long)} below ${most} or remove it.`,
    );
  }
}

export function checkLimitValue(throttle: string, max: unknown): number {
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': limit(${String(max)}, …): N must be a positive whole number of deliveries, such as limit(100, '1s').`,
    );
  }
  return max;
}
