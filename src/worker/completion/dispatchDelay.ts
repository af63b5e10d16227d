/** Delays kept for the percentiles: the latest this many. */
const SAMPLES = 1000;

/**
 * The dispatch delay of a worker's jobs: from processedOn (when the delivery script took the job, on the Redis
 * clock) to the moment its processor starts (this process's clock), for seed 004's question of what arrives
 * downstream. The two clocks are put on one footing by the delivery replies: a reply's Redis time is at most
 * the local time it arrived at, so the least (local arrival - Redis time) seen is the clocks' offset plus the
 * shortest one-way trip, an over-estimate of the offset by well under a millisecond on a LAN.
 * It keeps the processors' run times too: a concurrency of n sustains n / (mean run time) deliveries.
 */
export class DispatchDelay {
  private offsetMs = Infinity;
  private readonly delays: number[] = [];
  private next = 0;
  private readonly durations: number[] = [];
  private nextDuration = 0;

  /** A delivery reply with Redis time `redisNowMs` arrived now. */
  clockSample(redisNowMs: number, localNowMs: number = Date.now()): void {
    const offset = localNowMs - redisNowMs;
    if (offset < this.offsetMs) this.offsetMs = offset;
  }

  /** A processor starts on a job the delivery script took at processedOn (Redis clock). */
  started(processedOn: number | undefined, localNowMs: number = Date.now()): void {
    if (processedOn === undefined || !Number.isFinite(this.offsetMs)) return;
    const delay = Math.max(0, localNowMs - this.offsetMs - processedOn);
    if (this.delays.length < SAMPLES) this.delays.push(delay);
    else this.delays[this.next] = delay;
    this.next = (this.next + 1) % SAMPLES;
  }

  /** A processor ran for `ms`: what a concurrency limit turns into a rate (throttleStats' effective rate). */
  ended(ms: number): void {
    if (this.durations.length < SAMPLES) this.durations.push(ms);
    else this.durations[this.nextDuration] = ms;
    this.nextDuration = (this.nextDuration + 1) % SAMPLES;
  }

  /** p50 and p99 (ms) of the latest delays, and how many, with the mean processing time (ms; null before one ended); null before the first delay. */
  percentiles(): { p50: number; p99: number; samples: number; processingMs: number | null } | null {
    if (this.delays.length === 0) return null;
    const sorted = [...this.delays].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    const processingMs = this.durations.length === 0 ? null : this.durations.reduce((a, b) => a + b, 0) / this.durations.length;
    return { p50: at(0.5), p99: at(0.99), samples: sorted.length, processingMs };
  }
}
