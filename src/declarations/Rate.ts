/**
 * A token bucket (generic cell rate): on average `n` deliveries per `perMs`, at most `burst` at once. An idle
 * bucket admits `burst` together, then one every perMs / n; in any window of length t at most
 * burst + n * t / perMs deliveries go.
 */
export interface Rate {
  /** The average number of deliveries per `perMs` (cost units, with a cost), a positive whole number. */
  readonly n: number;
  /** The period `n` is counted over, in milliseconds. One delivery is admitted every perMs / n ms on average. */
  readonly perMs: number;
  /**
   * The most deliveries an idle bucket admits at once (cost units, with a cost), a positive whole number.
   * `Throttle.rate` sets 1 (evenly spaced) unless its `burst` option says otherwise.
   */
  readonly burst: number;
}

/** How long an emptied bucket takes to admit a full burst again: burst * perMs / n (ms, rounded up). */
export function rateFillMs(rate: Rate): number {
  return Math.ceil((rate.burst * rate.perMs) / rate.n);
}

/** The most deliveries the rate lets through in any window of `windowMs`. */
export function mostInWindowByRate(rate: Rate, windowMs: number): number {
  return rate.burst + Math.floor((rate.n * windowMs) / rate.perMs);
}

/** The stricter of two rates: the lower average, and the lower burst. */
export function stricterRate(a: Rate | undefined, b: Rate | undefined): Rate | undefined {
  if (!a || !b) return a ?? b;
  const slower = a.n * b.perMs <= b.n * a.perMs ? a : b;
  return Object.freeze({ n: slower.n, perMs: slower.perMs, burst: Math.min(a.burst, b.burst) });
}
