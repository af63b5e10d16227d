import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { Limit } from './Limit';
import { mostInWindowByRate, Rate } from './Rate';
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

export function checkConcurrency(throttle: string, n: unknown): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': concurrency(${String(n)}): n must be a positive whole number of jobs in flight, such as concurrency(5).`,
    );
  }
  return n;
}

function describeRate(rate: Rate): string {
  return `rate(${rate.n}, '${formatWindow(rate.perMs)}', { burst: ${rate.burst} })`;
}

export function checkRate(throttle: string, n: unknown, perMs: number, burst: unknown): Rate {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidThrottleError(`Throttle '${throttle}': rate(${String(n)}, …): the rate must be a positive whole number of deliveries per period, such as rate(100, '1s').`);
  }
  if (typeof burst !== 'number' || !Number.isSafeInteger(burst) || burst < 1) {
    throw new InvalidThrottleError(`Throttle '${throttle}': rate(${n}, …, { burst: ${String(burst)} }): burst must be a positive whole number (1, the default, spaces deliveries evenly).`);
  }
  return Object.freeze({ n, perMs, burst });
}

/** A window limit the rate keeps from ever binding (the rate lets at most N through in any such window). */
export function checkRateAgainstLimit(throttle: string, rate: Rate, limit: Limit): void {
  const most = mostInWindowByRate(rate, limit.windowMs);
  if (limit.max >= most) {
    throw new InvalidThrottleError(
      `Throttle '${throttle}': limit ${describe(limit)} can never apply alongside ${describeRate(rate)}: the rate allows at most ${most} in any ${formatWindow(limit.windowMs)}. Lower the limit below ${most}, or remove it.`,
    );
  }
}

/**
 * A rate whose tokens are leased (spent up to `leaseMs` after their grant) is granted that much short of its
 * burst (lua/includes/rateCounter.lua): the burst must leave at least one token.
 */
export function checkRateLease(throttle: string, rate: Rate, leaseMs: number): void {
  if (leaseMs <= 0 || (rate.burst - 1) * rate.perMs >= leaseMs * rate.n) return;
  const leastBurst = 1 + Math.ceil((leaseMs * rate.n) / rate.perMs);
  const mostLeaseMs = Math.floor(((rate.burst - 1) * rate.perMs) / rate.n);
  const lease = mostLeaseMs > 0
    ? `or lower leaseMs to at most ${mostLeaseMs}`
    : 'or deliver exactly (the queue and its throttles in one slot: no lease)';
  throw new InvalidThrottleError(
    `Throttle '${throttle}': ${describeRate(rate)} cannot be kept in leased delivery with leaseMs ${leaseMs}: a leased token may be spent up to ${leaseMs} ms after its grant, so the burst must cover what the rate grants meanwhile. Raise burst to at least ${leastBurst}, ${lease}.`,
  );
}

/**
 * The shortest start deadline a rate gets where its burst covers less: shorter, more jobs would go back for
 * starting late, and a rate keeps the token of a job put back (lua/includes/rateCounter.lua).
 */
const SHORTEST_RATE_DEADLINE_MS = 10;

/**
 * The share of a rate's emission interval (per / n) a start deadline reaches beyond what its burst covers at no
 * cost to the sustained rate: a rate of burst 1 then grants one token every T + H, 1 - 20/21 of its rate at most,
 * within the 95 % the processor-start rule may cost. Where that is under 10 ms, H is 10 ms and costs more.
 */
const RATE_DEADLINE_SLACK = 1 / 20;

/**
 * The start deadline an exact worker whose deadline is `deadlineMs` (0: none) keeps on this rate: its
 * processors start up to that long after their grant (lua/includes/rateCounter.lua's H), so the rate holds at
 * processor start. What the burst covers, (burst - 1) * perMs / n, costs nothing; beyond it the rate grants
 * one token every T + H less that (rateShareKept). H goes a twentieth of T further, or to 10 ms where that is
 * less (a rate of burst 1 faster than 5 per second: 100 per second runs at 50 per second, rateShareKept 0.5).
 * `alone`: no leased worker declares the throttle; else H stays within what the burst covers (a leased pool's
 * tokens need tau >= 0) and is 0 where that is under 10 ms: the leased workers' lease, the throttle's rate
 * lease then, gives the exact workers' jobs their deadline (lua/includes/exactRoom.lua).
 */
export function rateStartDeadlineMs(rate: Rate, deadlineMs: number, alone = true): number {
  if (deadlineMs <= 0) return 0;
  const T = rate.perMs / rate.n;
  const covered = Math.floor((rate.burst - 1) * T + (alone ? T * RATE_DEADLINE_SLACK : 0));
  if (covered >= SHORTEST_RATE_DEADLINE_MS) return Math.min(deadlineMs, covered);
  return alone ? Math.min(deadlineMs, SHORTEST_RATE_DEADLINE_MS) : 0;
}

/** The share of a rate's sustained n / per kept when its tokens are granted with start deadline H (ms). */
export function rateShareKept(rate: Rate, startDeadlineMs: number): number {
  const T = rate.perMs / rate.n;
  return T / (T + Math.max(0, startDeadlineMs - (rate.burst - 1) * T));
}
