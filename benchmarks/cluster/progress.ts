import { setTimeout as sleep } from 'node:timers/promises';

/** Delivery stopped: no job completed for `stallMs` while jobs were left (a benchmark reports it, not a timing). */
export class StalledError extends Error {
  constructor(readonly what: string, readonly done: number, readonly total: number, readonly stallMs: number) {
    super(`${what}: stalled at ${done} of ${total} jobs (none for ${stallMs} ms)`);
  }
}

/** How long without a single completion counts as stalled; every case here completes hundreds per second. */
export const STALL_MS = 8_000;

/**
 * Waits until `done()` reaches `total`; throws StalledError when it stops moving for STALL_MS, or an Error
 * after `timeoutMs` or once `failed()` holds.
 */
export async function waitWithProgress(done: () => number, total: number, failed: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let movedAt = Date.now();
  while (done() < total) {
    if (failed()) throw new Error(`${what}: a job failed or a worker emitted an error (${done()} of ${total} done)`);
    const now = Date.now();
    if (done() !== last) {
      last = done();
      movedAt = now;
    } else if (now - movedAt > STALL_MS) {
      throw new StalledError(what, last, total, STALL_MS);
    }
    if (now > deadline) throw new Error(`${what}: timed out after ${timeoutMs} ms at ${done()} of ${total} jobs`);
    await sleep(20);
  }
}
