import { setTimeout as sleep } from 'node:timers/promises';
import type { Grantor } from '../../src/grant/Grantor';
import type { Delivery } from '../../src/grant/types';
import type { TestClock } from '../../test/support/testClock';

/** How many of `tokens` call i of `calls` asks for, so that the calls share them evenly. */
function share(tokens: number, calls: number, i: number): number {
  return Math.floor(((i + 1) * tokens) / calls) - Math.floor((i * tokens) / calls);
}

async function grantCopies(grantor: Grantor, delivery: Delivery, count: number): Promise<number> {
  if (count === 0) return 0;
  const results = await grantor.grant(Array.from({ length: count }, () => delivery));
  return results.filter((result) => result.granted).length;
}

/** Asks for `tokens` copies of one delivery at once, `batch` per call. Resolves to how many were granted. */
export async function fillBurst(grantor: Grantor, delivery: Delivery, tokens: number, batch = 1000): Promise<number> {
  let granted = 0;
  for (let done = 0; done < tokens; done += batch) granted += await grantCopies(grantor, delivery, Math.min(batch, tokens - done));
  return granted;
}

/** Asks for `tokens` copies in `calls` calls spread evenly over `spanMs` of real time (scheduled, not drifting). */
export async function fillSpreadRealTime(
  grantor: Grantor, delivery: Delivery, tokens: number, spanMs: number, calls: number,
): Promise<number> {
  const start = Date.now();
  let granted = 0;
  for (let i = 0; i < calls; i++) {
    const wait = start + (i * spanMs) / calls - Date.now();
    if (wait > 0) await sleep(wait);
    granted += await grantCopies(grantor, delivery, share(tokens, calls, i));
  }
  return granted;
}

/**
 * As fillSpreadRealTime, but on a shifted clock (a Grantor built with `clock.internals()`): the calls are
 * spread over `spanMs` of script time without waiting for it. The clock ends about spanMs ahead.
 */
export async function fillSpreadShifted(
  grantor: Grantor, clock: TestClock, delivery: Delivery, tokens: number, spanMs: number, calls: number,
): Promise<number> {
  let offsetMs = 0;
  let granted = 0;
  for (let i = 0; i < calls; i++) {
    const target = Math.floor((i * spanMs) / calls);
    clock.advance(target - offsetMs);
    offsetMs = target;
    granted += await grantCopies(grantor, delivery, share(tokens, calls, i));
  }
  return granted;
}
