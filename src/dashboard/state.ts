/**
 * A throttle's or a bucket's state at a glance, from the figures the page already has. Shared by the server
 * (which sends it) and the page (its colours): types only from wire.ts, so the browser build can import it.
 */
import type { WireBucket, WireState, WireThrottleStats } from './wire';

/** A recovery hold stops every bucket, so it wins over a pause; a pause over a full bucket, which would have room once resumed. */
export function throttleState(t: Pick<WireThrottleStats, 'recoveryHold' | 'paused' | 'bucketsAtLimit'>): WireState {
  if (t.recoveryHold) return 'recovering';
  if (t.paused?.all) return 'paused';
  if (t.bucketsAtLimit > 0) return 'at-limit';
  return 'flowing';
}

/** A bucket is at its limit while some limit has no room for one more (bindingNow names it). */
export function bucketState(b: Pick<WireBucket, 'paused' | 'bindingNow'>, recovering: boolean): WireState {
  if (recovering) return 'recovering';
  if (b.paused) return 'paused';
  if (b.bindingNow !== null) return 'at-limit';
  return 'flowing';
}
