import { encodeSegment } from '../../keys/keyEncoding';
import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/wakeBuckets-3.lua, on a queue: the classes that wait on a throttle's buckets (all of them, or one) look again
 * at the next delivery call, and bullmq's blocked main loop is woken through the queue's marker.
 */
export const wakeBucketsScript = fixedKeysScript('wakeBuckets', ['wakeups', 'leaseRoom', 'marker']);

/** ARGV[2] for every bucket of the throttle. */
export const EVERY_BUCKET = '';

/** The queue's keys a wake touches. */
export interface WakeKeys {
  /** The queue's wakeups (ZSET bucket id -> us). */
  readonly wakeups: string;
  /** Its lease-room (HASH bucket id -> us). */
  readonly leaseRoom: string;
  /** bullmq's marker of the queue. */
  readonly marker: string;
}

export interface WakeBucketsInput extends WakeKeys {
  /** The throttle's name (sent encoded). */
  readonly throttle: string;
  /** A bucket segment, or EVERY_BUCKET. */
  readonly bucket: string;
}

/** Resolves to the number of buckets woken. */
export function runWakeBuckets(runner: ScriptRunner, input: WakeBucketsInput): Promise<number> {
  return wake(runner, input, encodeSegment(input.throttle), input.bucket);
}

/** One call of the script: the throttle's encoded name and a bucket segment (or EVERY_BUCKET). */
function wake(runner: ScriptRunner, keys: WakeKeys, encodedThrottle: string, bucket: string): Promise<number> {
  const call = fixedCall(wakeBucketsScript, { wakeups: keys.wakeups, leaseRoom: keys.leaseRoom, marker: keys.marker }, [encodedThrottle, bucket]);
  return sendCall(runner, call).then(Number);
}

/**
 * Wakes the given buckets (ids as the delivery scripts name them, "<encoded throttle>=<bucket segment>"), each in
 * its own call; resolves to the number of buckets woken (those with waiting classes).
 */
export async function runWakeBucketIds(runner: ScriptRunner, keys: WakeKeys, bucketIds: Iterable<string>): Promise<number> {
  let woken = 0;
  for (const id of bucketIds) {
    const at = id.indexOf('=');
    woken += await wake(runner, keys, id.slice(0, at), id.slice(at + 1));
  }
  return woken;
}
