/** At most `max` deliveries in any window of `windowMs` milliseconds. */
export interface Limit {
  /**
   * N: the most deliveries in any one window, a positive whole number. With a cost (`Throttle.cost`), the most
   * cost units (such as tokens) instead.
   */
  readonly max: number;
  /** W: the window's length in milliseconds, a whole number, at least 1. */
  readonly windowMs: number;
}
