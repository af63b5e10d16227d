/** How a ThrottleGate batches, parks and wakes delivery requests, with the measurements behind each figure. */

/**
 * Most slots one delivery call serves, and most delivery calls in flight at once. Requests that arrive while
 * a call runs make the next call's batch; a second call goes before the first returns only with at least
 * MIN_OVERLAPPING_BATCH requests, so that Node and Redis work at the same time without splitting batches
 * into small ones (measured with workerThroughput at concurrency 50: 1 in flight ~0.6 of plain bullmq,
 * 2 with a minimum of 24 ~0.75-0.8, 2 or 3 with any batch worse than 1).
 * Completions waiting for their own call go just ahead of each delivery call (JobCompleter.flush): a slot's
 * next job is handed over only after its completion, so a completion that waited for the previous completion
 * call to return made the slot wait longer than its fetch did (measured: 1.8 ms against 1.5 ms; sending them
 * with the delivery call took workerThroughput at concurrency 50 from 0.66-0.82 to 0.85-1.14 of plain bullmq).
 */
export const MAX_BATCH = 64;
export const MAX_CALLS_IN_FLIGHT = 2;
export const MIN_OVERLAPPING_BATCH = 24;
/**
 * A slot's request that finds no room waits in this process for room to return, rather than go back to
 * bullmq to block on the queue's marker: bullmq's main loop asks again one slot at a time, and room left
 * unused until it does is lost for good (at 100 per 100 ms, one worker of concurrency 50 sustained ~98.5%
 * of N/W without waiting this way, 99.0-99.3% with). A request from bullmq's main loop waits only while room
 * returns within SHORT_WAIT_MS, MAX_SHORT_WAITS times at most: the main loop awaits it, so it could hold
 * back a job of another bucket. A slot's next fetch after a completion or failure waits while room returns
 * within PARK_MS, for as long as at least one slot is left to the main loop (which then blocks on the
 * marker and takes new jobs of any bucket; each job it takes sends the waiting requests back to look too).
 * The worker's `completed` and `failed` events fire before that wait (ThrottledWorker.handleCompleted).
 */
export const SHORT_WAIT_MS = 5;
/**
 * A slot's next fetch waits for room without a call while the last call that left slots waiting said room
 * returns within this (SlotRequests.roomReturnsAt): what the call cannot see meanwhile, a new job of a bucket
 * with room, waits at most this much longer than a call would have let it (bullmq's main loop, woken by its
 * marker, fetches it at once if it is not busy).
 */
export const UNASKED_WAIT_MS = 20;
export const MAX_SHORT_WAITS = 10;
export const PARK_MS = 1_000;
/**
 * A blocked worker is woken this much before room returns: the wake (timer, marker, bullmq's blocking read,
 * its fetch) takes a ms or two, and a call that comes early waits the rest out as above (100 per 100 ms
 * sustained ~98.0% of N/W waking on time, ~98.5-98.8% waking 2-3 ms early).
 */
export const EARLY_WAKE_MS = 2;

export interface DeliveryRequest {
  token: string;
  name: string;
  /** 'fetch': bullmq's main loop asks (and awaits it); 'next': a slot's next job after a completion or failure. */
  kind: 'fetch' | 'next';
  /** Times it waited for room. */
  waits: number;
  /** bullmq's main loop asks (not getNextJob, nor a slot's handed-over next job): see SlotRequests.submit. */
  mainLoop?: boolean;
}
