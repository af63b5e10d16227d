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
  /** Calls in flight that are only waiting (for room, say): they leave their place to new calls meanwhile. */
  private waiting = 0;

  constructor(
    private readonly serve: (batch: PendingRequest<Q, R>[]) => Promise<void>,
    private readonly maxBatch: number,
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

  /** Runs `wait` as part of a call without holding back new calls while it lasts. */
  async whileWaiting<T>(wait: Promise<T>): Promise<T> {
    this.waiting++;
    this.pump();
    try {
      return await wait;
    } finally {
      this.waiting--;
    }
  }

  private pump(): void {
    for (;;) {
      const busy = this.inFlight - this.waiting;
      if (busy >= this.maxInFlight || this.pending.length < (busy === 0 ? 1 : this.minOverlappingBatch)) return;
      this.inFlight++;
      const batch = this.pending.splice(0, this.maxBatch);
      void this.serve(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }
}
