import { ScriptRunner } from '../lua/scripts';
import { runTakeNextJobs, TakeCall, TakeReply } from '../lua/calls/takeNextJobs';

// The delivery scripts' input and reply are the script layer's (src/lua/calls/takeNextJobs.ts); exported here as before.
export type { TakeCall, TakeReply } from '../lua/calls/takeNextJobs';
export { deliveredAny, parseTakeReply, takeJobsInput, takeNextJobsCall } from '../lua/calls/takeNextJobs';

/** One exact delivery call (lua/takeNextJobs-19.lua): the next jobs that fit, each locked with its slot's token, moved to active. */
export async function takeNextJobs(runner: ScriptRunner, call: TakeCall): Promise<TakeReply> {
  return runTakeNextJobs(runner, call);
}

/**
 * When the next bucket has room or delayed job is due, on this process's clock (ms; to the us for room), if
 * any: a bucket's room is on the Redis clock (converted through the reply's nowUs), a delayed job on the
 * callers' clock already.
 */
export function nextLookLocalMs(reply: TakeReply, localNowMs: number): number | undefined {
  const times: number[] = [];
  if (reply.nextWakeUs > 0) times.push((reply.nextWakeUs - reply.nowUs) / 1000 + localNowMs);
  if (reply.nextDelayedMs > 0) times.push(reply.nextDelayedMs);
  return times.length === 0 ? undefined : Math.min(...times);
}
