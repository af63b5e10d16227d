/**
 * Gathers requests that arrive while calls are in flight and hands them over in batches: a busy worker's
 * slots then share one delivery call (and its fixed cost) instead of making one each.
 */
export interface PendingRequest<Q, R> {
  readonly request: Q;
  resolve(reply: R): void;
  reject(error: Error): void;
}

export class RequestBatcher<Q, R> {
  private readonly pending: PendingRequest<Q, R>[] = [];
  private inFlight = 0;

  constructor(
    private readonly serve: (batch: PendingRequest<Q, R>[]) => Promise<void>,
    /** The most requests one call serves: a number, or read at each call (it may change as the worker measures). */
    private readonly maxBatch: number | (() => number),
    private readonly maxInFlight: number,
    /** A call beyond the first in flight goes only with at least this many requests. */
    private readonly minOverlappingBatch = 1,
  ) {}

  submit(request: Q): Promise<R> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      this.pump();
    });
  }

  /** Serves requests again that a call gave back (they waited for room): ahead of newer ones. */
  resubmit(requests: readonly PendingRequest<Q, R>[]): void {
    if (requests.length === 0) return;
    this.pending.unshift(...requests);
    this.pump();
  }

  /** Serves every waiting request now, whatever is in flight (in calls of at most maxBatch). */
  flush(): void {
    while (this.pending.length > 0) this.start();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length >= (this.inFlight === 0 ? 1 : this.minOverlappingBatch)) this.start();
  }

  private start(): void {
    this.inFlight++;
    const batch = this.pending.splice(0, Math.max(1, typeof this.maxBatch === 'number' ? this.maxBatch : this.maxBatch()));
    // A serve that throws (a bug, not a Redis error: those it answers itself) rejects its requests that are still
    // waiting (a settled one ignores it), so that none waits forever and nothing is left unhandled.
    void this.serve(batch)
      .catch((error: unknown) => { for (const p of batch) p.reject(error instanceof Error ? error : new Error(String(error))); })
      .finally(() => {
        this.inFlight--;
        this.pump();
      });
  }
}
