import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runForgetRemovedJobs } from '../lua/calls/forgetRemovedJobs';

/** Most events one call reads. */
const EVENTS_PER_CALL = 1000;

/** Stops counting held jobs that were removed from outside (see lua/forgetRemovedJobs-4.lua). */
export async function forgetRemovedJobs(runner: ScriptRunner, eventsKey: string, keys: QueueThrottleKeys): Promise<number> {
  let forgotten = 0;
  for (let round = 0; round < 10; round++) {
    const count = await runForgetRemovedJobs(runner, { events: eventsKey, queueKeys: keys, mostEvents: EVENTS_PER_CALL });
    forgotten += count;
    if (count === 0) break;
  }
  return forgotten;
}
