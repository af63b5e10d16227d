import { Rate, rateFillMs } from './Rate';

/**
 * The limits of a throttle, one tagged value per limit, for the code that handles each limit of a throttle
 * whatever its kind (merging, the limits hash, capacities, look-back spans): a `switch` on `kind` with
 * `unknownKind` in its default is checked exhaustive, so a new kind is a compile error wherever it is not
 * handled yet. Internal: declarations keep their public fields (`limits`, `tokenRate`, `maxInFlight`), and
 * `limitsOf` reads them. Each kind's Lua is one include with the same functions (reading its fields of the
 * limits hash, a bucket's room, adding, giving back, saving: lua/includes/bucketCounters.lua lists them;
 * windowKind, rateKind, inFlightKind).
 */
export type LimitSpec = WindowLimit | RateLimit | ConcurrencyLimit;

/** The kinds of limit: `limit(n, w)`, `rate(n, per, { burst })` and `concurrency(n)`. */
export type LimitKind = LimitSpec['kind'];

/** `limit(max, windowMs)`: at most `max` deliveries (cost units) in any window of `windowMs` (lua/includes/windowCounter.lua). */
export interface WindowLimit {
  readonly kind: 'window';
  readonly max: number;
  readonly windowMs: number;
}

/** `rate(n, per, { burst })`: a token bucket (lua/includes/rateCounter.lua). */
export interface RateLimit {
  readonly kind: 'rate';
  readonly rate: Rate;
}

/** `concurrency(n)`: at most `n` jobs (cost units) of each bucket in flight (lua/includes/inFlightCounter.lua). */
export interface ConcurrencyLimit {
  readonly kind: 'concurrency';
  readonly n: number;
}

/** The fields a declaration (Throttle, ThrottleSpec, EffectiveThrottle) holds its limits in. */
export interface LimitFields {
  readonly limits: readonly { readonly max: number; readonly windowMs: number }[];
  readonly tokenRate?: Rate;
  readonly maxInFlight?: number;
}

/**
 * Each limit of a throttle: its windows in their order (shortest first), then its rate, then its concurrency,
 * the order the limits hash is written in (lua/publishLimits-n.lua). Empty when it declares none.
 */
export function limitsOf(throttle: LimitFields): LimitSpec[] {
  const limits: LimitSpec[] = throttle.limits.map((limit): WindowLimit => ({ kind: 'window', max: limit.max, windowMs: limit.windowMs }));
  if (throttle.tokenRate) limits.push({ kind: 'rate', rate: throttle.tokenRate });
  if (throttle.maxInFlight !== undefined) limits.push({ kind: 'concurrency', n: throttle.maxInFlight });
  return limits;
}

/** Whether the throttle declares at least one limit of any kind. */
export function hasLimits(throttle: LimitFields): boolean {
  return limitsOf(throttle).length > 0;
}

/** The default of a `switch` on a limit's kind: unreachable while every kind is handled. */
export function unknownKind(limit: never): never {
  throw new Error(`unknown limit kind: ${JSON.stringify(limit)}`);
}

/**
 * How far back a limit's count looks (ms): a window's length, the time a rate takes to fill its burst (a bucket
 * idle that long admits its whole burst whatever it held before), none for a concurrency (it counts jobs in
 * flight, not time).
 */
export function lookBackMs(limit: LimitSpec): number {
  switch (limit.kind) {
    case 'window': return limit.windowMs;
    case 'rate': return rateFillMs(limit.rate);
    case 'concurrency': return 0;
    default: return unknownKind(limit);
  }
}
