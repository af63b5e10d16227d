/**
 * The most events that fall inside any one window of length `windowLength`: the largest count with
 * t_last - t_first < windowLength. Times and length in the same unit (ms for processedOn).
 */
export function mostInAnyWindow(times: readonly number[], windowLength: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last] - sorted[first] >= windowLength) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}
