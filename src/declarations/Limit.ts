/** At most `max` deliveries in any window of `windowMs` milliseconds. */
export interface Limit {
  readonly max: number;
  readonly windowMs: number;
}
