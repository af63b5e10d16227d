/**
 * How many jobs one delivery call brings, while processors start late. A call's jobs start one after another, so
 * the last of a large batch starts latest: on a machine whose cores are all busy, 50 jobs from one call took
 * longer than h to start, each was put back, its room returned at once, and the next call brought 50 again
 * (2 workers of 50 on a backlog, three busy loops beside them: 63 starts and 4,200 put back in 20 s). So a
 * late start halves the batch (once per call: its other late jobs say the same), and each batch's worth of
 * starts in time adds one back, until there is no limit again (additive increase, multiplicative decrease).
 */
export class BatchLimit {
  /** Infinity: no limit (the batcher's own MAX_BATCH applies). */
  limit = Infinity;
  /** performance.now() of the last halving: a late job of a call sent before it halves nothing more. */
  private halvedAt = -Infinity;
  private onTimeStarts = 0;

  /** A job of a call sent at `sentAt`, which brought `batch` jobs, came to its start too late. */
  late(sentAt: number, batch: number): void {
    if (sentAt <= this.halvedAt) return;
    this.limit = Math.max(1, Math.floor(Math.min(this.limit, batch) / 2));
    this.halvedAt = performance.now();
    this.onTimeStarts = 0;
  }

  /** A job started in time. */
  onTime(): void {
    if (this.limit === Infinity || ++this.onTimeStarts < this.limit) return;
    this.onTimeStarts = 0;
    this.limit = this.limit + 1 >= BATCH_LIMIT_LIFTED ? Infinity : this.limit + 1;
  }
}

/** A limit grown back to this is no limit: the batcher's MAX_BATCH. */
const BATCH_LIMIT_LIFTED = 64;
