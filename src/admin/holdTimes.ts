/**
 * How long a throttle's jobs waited on its full buckets before delivery, as the delivery scripts count it
 * (lua/includes/throttleStatsNotes.lua, statsNotes): a histogram with these upper bounds (ms), the same as the
 * scripts' BOUNDS_MS. A job that never waited counts in the first bucket, with a wait of 0.
 */
export const HOLD_BOUNDS_MS: readonly number[] = [100, 1000, 10_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000, 21_600_000, 86_400_000];

/**
 * How long a throttle's delivered jobs waited on its full buckets (ThrottleStats.holdTimes), since its keys were
 * created: a cumulative histogram with upper bounds of 100 ms, 1 s, 10 s, 1 min, 5 min, 10 min, 30 min, 1 h, 6 h
 * and 24 h, then one for every delivery. A job that never waited counts in the first bucket.
 */
export interface HoldTimes {
  /** Deliveries that waited at most `HOLD_BOUNDS_MS[i]` (cumulative, as Prometheus buckets), then all of them. */
  readonly cumulative: readonly number[];
  /** Every delivery the histogram counts (the last of `cumulative`). */
  readonly count: number;
  /** Their waits added up (ms). */
  readonly sumMs: number;
}

/** The stats hash fields one queue keeps of a throttle's waits (lua/includes/throttleStatsNotes.lua). */
export const HOLD_FIELDS: readonly string[] = ['heldCount', 'heldSumMs', ...Array.from({ length: HOLD_BOUNDS_MS.length + 1 }, (_, i) => `held:${i + 1}`)];

/** Adds one queue's fields (HOLD_FIELDS' values, in order) to a running sum of per-bucket counts. */
export function addHoldFields(into: { waited: number; sumMs: number; byBound: number[] }, values: readonly (string | null)[]): void {
  into.waited += Number(values[0] ?? 0);
  into.sumMs += Number(values[1] ?? 0);
  for (let i = 0; i <= HOLD_BOUNDS_MS.length; i++) into.byBound[i] = (into.byBound[i] ?? 0) + Number(values[2 + i] ?? 0);
}

/**
 * The histogram over `delivered` deliveries, `waited` of which waited (by bound in `byBound`): the others
 * went without waiting. A job put back for starting late is counted once in `delivered` but may have waited
 * twice: never fewer than the waits.
 */
export function holdTimes(delivered: number, sums: { waited: number; sumMs: number; byBound: readonly number[] }): HoldTimes {
  const count = Math.max(delivered, sums.waited);
  const cumulative: number[] = [];
  let running = count - sums.waited;
  for (let i = 0; i < HOLD_BOUNDS_MS.length; i++) {
    running += sums.byBound[i] ?? 0;
    cumulative.push(running);
  }
  cumulative.push(count);
  return { cumulative, count, sumMs: sums.sumMs };
}
