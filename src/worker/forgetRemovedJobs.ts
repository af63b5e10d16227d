import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';

/** Stops counting held jobs that were removed from outside (see lua/forgetRemovedJobs-4.lua). */
export async function forgetRemovedJobs(runner: ScriptRunner, eventsKey: string, keys: QueueThrottleKeys): Promise<number> {
  let forgotten = 0;
  for (let round = 0; round < 10; round++) {
    const [count] = (await runner.run('forgetRemovedJobs', [eventsKey, keys.state, keys.intake, keys.removedHeld], [1000])) as number[];
    forgotten += Number(count);
    if (Number(count) === 0) break;
  }
  return forgotten;
}
