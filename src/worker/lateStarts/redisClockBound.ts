/**
 * When a delivery script ran, on this process's monotonic clock (performance.now()), from the Redis time it read
 * (its reply's nowUs, the time its deliveries were counted at): no earlier than the call was sent, and no earlier
 * than that Redis time plus a lower bound on (this clock − Redis's clock).
 *
 * Why: a job's start deadline counted from the moment its call was sent also counts the time the call waited for
 * Redis before its script ran. Ten queues' workers in one process sharing a binding limit queued 40 calls on one
 * connection (41 ms median from sending to reply, h 33 ms): jobs whose deliveries were counted a moment before the
 * reply went back for starting late, and each put-back cost three script calls and a delivery more.
 *
 * Invariant: `low(now)` never exceeds the true offset d (local − Redis) at `now`, so the moment returned is never
 * later than the script's: the age a start is checked with is never less than its true age. It holds because
 * every call's script ran between its sending and its reply, so sentAt − redisMs ≤ d for the d of that moment;
 * the bound is the largest such figure seen, less what the clocks may have drifted apart since (DRIFT, twice
 * what NTP slews a clock by at most, 500 ppm). A Redis clock that steps forward lowers d at once: a reply whose
 * upper bound (repliedAt − redisMs) falls below the bound shows it, and the bound restarts from that call alone
 * (a step backward only raises d).
 */
const DRIFT = 0.001;

export class RedisClockBound {
  private low = -Infinity;
  private lowAt = 0;

  /** A call sent at `sentAt` answered at `repliedAt` (this clock), its script having read `redisMs` (Redis's). */
  sample(sentAt: number, repliedAt: number, redisMs: number): void {
    const low = sentAt - redisMs;
    const current = this.lowNow(repliedAt);
    if (low >= current || current > repliedAt - redisMs) {
      this.low = low;
      this.lowAt = repliedAt;
    }
  }

  /** The earliest the script that read `redisMs` can have run, on this clock, for a call sent at `sentAt`. */
  ranAt(sentAt: number, redisMs: number, now: number): number {
    return Math.max(sentAt, redisMs + this.lowNow(now));
  }

  private lowNow(now: number): number {
    return this.low - Math.max(0, now - this.lowAt) * DRIFT;
  }
}
