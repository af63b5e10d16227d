/** Sustained rate under saturation: N over the mean time between a delivery and the delivery N later (per ms). */
export function sustainedRatePerMs(times: readonly number[], max: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let total = 0;
  for (let i = 0; i + max < sorted.length; i++) total += sorted[i + max] - sorted[i];
  return max / (total / (sorted.length - max));
}
