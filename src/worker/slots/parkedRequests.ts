import { PendingRequest } from '../../redis/requestBatcher';

/**
 * Slot requests waiting in this process for room to return, so that room is taken the moment it returns
 * rather than when bullmq next asks. They all go back to be served together at the earliest moment any of
 * them asked for (one timer), or at once when something else suggests there may be jobs to take.
 */
export class ParkedRequests<Q, R> {
  private parked: PendingRequest<Q, R>[] = [];
  private timer?: NodeJS.Timeout | NodeJS.Immediate;
  private at = Infinity;

  constructor(private readonly serveAgain: (requests: PendingRequest<Q, R>[]) => void) {}

  get size(): number {
    return this.parked.length;
  }

  count(predicate: (request: Q) => boolean): number {
    return this.parked.reduce((n, p) => n + (predicate(p.request) ? 1 : 0), 0);
  }

  /** Parks `request` until `inMs` from now (fractional ms: under 1 ms, the next turn of the event loop). */
  park(request: PendingRequest<Q, R>, inMs: number): void {
    this.parked.push(request);
    const at = performance.now() + inMs;
    if (at >= this.at) return;
    this.clearTimer();
    this.at = at;
    // Timers fire on whole ms and never early: the floor keeps a wake from coming later than room does by
    // more than the call takes; a call that comes early just parks again for the rest.
    this.timer = inMs >= 1 ? setTimeout(() => this.wake(), Math.floor(inMs)) : setImmediate(() => this.wake());
  }

  /** Sends every parked request back to be served now. */
  wake(): void {
    this.clearTimer();
    const requests = this.parked;
    this.parked = [];
    this.serveAgain(requests);
  }

  /** Answers every parked request with `reply` (closing, pausing). */
  release(reply: R): void {
    this.clearTimer();
    const requests = this.parked;
    this.parked = [];
    for (const request of requests) request.resolve(reply);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
    }
    this.timer = undefined;
    this.at = Infinity;
  }
}
