import { mostInAnyWindow } from '../../src/check/mostInAnyWindow';

export interface RateStats {
  deliveries: number;
  /** Most deliveries in any window of length W (t_last - t_first < W). */
  mostInWindow: number;
  /** From the first delivery to the last, ms. */
  spanMs: number;
  /** deliveries / span: a burst of N at the start lifts it above N/W by about N/span. */
  overallPerSecond: number;
  /** N / mean(t[i+N] - t[i]) over the sorted times: the pace once saturated, bursts averaged out. */
  sustainedPerSecond: number;
}

/** How closely delivery times (ms) keep to "at most max in any window of windowMs". */
export function rateStats(times: readonly number[], max: number, windowMs: number): RateStats {
  const sorted = [...times].sort((a, b) => a - b);
  const spanMs = sorted.length > 1 ? sorted[sorted.length - 1] - sorted[0] : 0;
  let gaps = 0;
  let gapCount = 0;
  for (let i = 0; i + max < sorted.length; i++) {
    gaps += sorted[i + max] - sorted[i];
    gapCount++;
  }
  return {
    deliveries: sorted.length,
    mostInWindow: mostInAnyWindow(sorted, windowMs),
    spanMs,
    overallPerSecond: spanMs > 0 ? (sorted.length * 1000) / spanMs : NaN,
    sustainedPerSecond: gapCount > 0 && gaps > 0 ? (max * 1000) / (gaps / gapCount) : NaN,
  };
}
