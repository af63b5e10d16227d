import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { RedisClient } from '../redis/connection';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';
import { readThrottledCount } from '../worker/getThrottledCount';

/**
 * How many of the queue's jobs the throttle layer holds, intake included: `state.held` + ZCARD `intake`, the
 * `throttled` of getThrottledCount and ThrottleAdmin.queueStats. Two reads whatever the number of held jobs.
 */
export async function countHeldJobs(client: RedisClient, runner: ScriptRunner, keys: QueueThrottleKeys, eventsKey: string): Promise<number> {
  try {
    // Held jobs removed from outside (say, from Bull Board) stop counting first, as getThrottledCount does.
    await forgetRemovedJobs(runner, eventsKey, keys);
  } catch {
    // A dashboard's Redis user may be refused scripts: the count then includes removed jobs until a worker's
    // next heartbeat forgets them, which beats a board that cannot show the queue.
  }
  return (await readThrottledCount(client, keys)).throttled;
}
