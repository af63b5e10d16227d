import { RedisClient } from '../redis/connection';

/** The dispatch delay of a throttle's live workers: processor start minus processedOn (src/worker/completion/dispatchDelay.ts). */
export interface DispatchDelayStats {
  /** The worst worker's p50 and p99 (ms). */
  p50Ms: number;
  /** The worst worker's p99 (ms): the highest p99 of the live workers (`p50Ms` is the same worker's p50). */
  p99Ms: number;
  /** Delays sampled, over the workers. */
  samples: number;
  /**
   * The leaseMs that covers the p99 delay. A full bucket's room returns all at once, so its next N deliveries go
   * together; processors that start up to d later can land 2N in one window of a downstream API that counts
   * arrivals, unless each token counts for W + h with h at least d.
   */
  suggestedLeaseMs: number;
  /** The processors' mean run time (ms) over the workers, weighted by their samples; null before any ran. */
  processingMs: number | null;
}

/** Reads each live worker's figures (its field in its queue's dispatch-delay hash); null before any. */
export async function readDispatchDelay(client: RedisClient, workers: readonly { key: string; workerId: string }[]): Promise<DispatchDelayStats | null> {
  let worst: DispatchDelayStats | null = null;
  let samples = 0;
  let processingSum = 0;
  let processingSamples = 0;
  for (const { key, workerId } of workers) {
    const text = await client.hget(key, workerId);
    const match = text === null ? null : /^(\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+) \d+(?: (\d+(?:\.\d+)?))?/.exec(text);
    if (!match) continue;
    const [p50, p99, count] = [Number(match[1]), Number(match[2]), Number(match[3])];
    samples += count;
    if (match[4] !== undefined) {
      processingSum += Number(match[4]) * count;
      processingSamples += count;
    }
    if (!worst || p99 > worst.p99Ms) worst = { p50Ms: p50, p99Ms: p99, samples: 0, suggestedLeaseMs: Math.ceil(p99), processingMs: null };
  }
  return worst && { ...worst, samples, processingMs: processingSamples > 0 ? processingSum / processingSamples : null };
}
