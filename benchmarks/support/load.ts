import { performance } from 'node:perf_hooks';

export interface LoadStats {
  calls: number;
  elapsedMs: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** The q-quantile (0..1) of ascending values, nearest rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * Calls `call` from `inFlight` concurrent loops until `durationMs` has passed, timing every call.
 * The loops share whatever connection `call` uses, so inFlight > 1 pipelines calls on it.
 */
export async function runFor(durationMs: number, inFlight: number, call: () => Promise<void>): Promise<LoadStats> {
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + durationMs;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      await call();
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  const elapsedMs = performance.now() - start;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    elapsedMs,
    callsPerSecond: (latencies.length * 1000) / elapsedMs,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  };
}
