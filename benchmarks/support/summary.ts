import { quantile } from './load';

export interface Summary {
  min: number;
  median: number;
  max: number;
}

/** min, median (the middle value, or the mean of the two middle ones) and max. */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { min: NaN, median: NaN, max: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { min: sorted[0], median, max: sorted[sorted.length - 1] };
}

/** Nearest-rank percentile (0..100) of unsorted values. */
export function percentile(values: readonly number[], p: number): number {
  return quantile([...values].sort((a, b) => a - b), p / 100);
}

export const round = (value: number, digits = 0): number => {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
};
