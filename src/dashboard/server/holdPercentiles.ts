import { HOLD_BOUNDS_MS, HoldTimes } from '../../admin/holdTimes';
import type { WireHoldPercentiles, WirePercentile } from '../wire';

/**
 * The bound under which the q-quantile of the waits falls. A histogram knows only how many waits fall under
 * each bound, so the answer is "at most that bound": interpolating inside a bucket would make up a figure
 * (jobs that never waited sit at 0 in the first one, which interpolation would call 50 ms).
 */
function percentile(times: HoldTimes, q: number): WirePercentile {
  if (times.count === 0) return null;
  const rank = Math.ceil(q * times.count);
  const index = times.cumulative.findIndex((c) => c >= rank);
  if (index >= 0 && index < HOLD_BOUNDS_MS.length) return { atMostMs: HOLD_BOUNDS_MS[index] };
  return { beyondMs: HOLD_BOUNDS_MS[HOLD_BOUNDS_MS.length - 1] };
}

export function holdPercentiles(times: HoldTimes): WireHoldPercentiles {
  return {
    count: times.count,
    meanMs: times.count > 0 ? times.sumMs / times.count : null,
    p50: percentile(times, 0.5),
    p90: percentile(times, 0.9),
    p99: percentile(times, 0.99),
  };
}
