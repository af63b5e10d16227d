/** bullmq's own default key prefix: queues and, unless `throttlePrefix` says otherwise, their throttles live under it. */
export const DEFAULT_PREFIX = 'bull';

/**
 * h of leased delivery, when leaseMs is not given: a token may be spent up to this long after the request
 * that asked for it, and counts against W + h (the sustained ceiling is N / (W + h): 90.9 per second for 100
 * per second). Long enough that a lease round trip (queue, grantor, queue) and the spend fit in it on a busy
 * machine whose event loop stalls for tens of ms; shorter where that is known not to happen.
 */
export const DEFAULT_LEASE_MS = 100;

/** h, when an exact worker chooses it (leaseMs left out): never shorter, never longer (src/worker/lateStarts/startDeadlines.ts). */
export const START_DEADLINE_FLOOR_MS = 10;
export const START_DEADLINE_CEILING_MS = 100;
