import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/releaseInFlight-1.lua, on the queue (exact delivery): jobs that ended leave the concurrency counts of the
 * buckets they were delivered from, and the classes waiting on those buckets wake.
 */
export const releaseInFlightScript = fixedKeysScript('releaseInFlight', ['inFlight']);

export interface ReleaseInFlightInput {
  /** KEYS[1]: the queue's in-flight index (HASH job id -> the counters it is in). */
  readonly inFlight: string;
  /** The queue base of our keys. */
  readonly queueBase: string;
  /** Ids of jobs whose processing ended. */
  readonly jobIds: readonly string[];
}

/** Resolves to the number of counts released. */
export function runReleaseInFlight(runner: ScriptRunner, input: ReleaseInFlightInput): Promise<number> {
  return sendCall(runner, fixedCall(releaseInFlightScript, { inFlight: input.inFlight }, [input.queueBase, ...input.jobIds])).then(Number);
}
