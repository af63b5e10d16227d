import type { Logger } from 'pino';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { decodeSegment } from '../keys/keyEncoding';
import { ScriptRunner } from '../lua/scripts';
import { LateDelivery } from './startDeadlines';

/**
 * Gives back what a job whose processor did not start in time was counted in (lua/returnTokens-n.lua), so that
 * putting it back costs its buckets nothing: without this, a limit of 2 per hour would lose an hour's room to a
 * job that never ran. Each (job, throttle) is returned once whatever is retried (the throttle's returned-set);
 * rates keep what they granted (lua/includes/rateCounter.lua), and concurrency returns as the job ends.
 */
export async function returnLateStart(runner: ScriptRunner, keys: ThrottleKeys, queue: LateStartQueue, late: LateDelivery): Promise<void> {
  const keyIndex = new Map<string, number>();
  const callKeys: string[] = [];
  const indexOf = (key: string): number => {
    let index = keyIndex.get(key);
    if (index === undefined) {
      callKeys.push(key);
      index = callKeys.length;
      keyIndex.set(key, index);
    }
    return index;
  };
  const args: (string | number)[] = [];
  const buckets: [string, string][] = [];
  let groups = 0;
  for (const part of late.ticket.split('|').filter(Boolean)) {
    // "<encoded name>=<bucket>$<cost>@<window ms>,..." (lua/includes/exactRoom.lua's roomTicketing)
    const at = part.lastIndexOf('@');
    const dollar = part.lastIndexOf('$', at);
    const bucketId = part.slice(0, dollar);
    const eq = bucketId.indexOf('=');
    const name = decodeSegment(bucketId.slice(0, eq));
    const bucket = bucketId.slice(eq + 1);
    buckets.push([bucketId.slice(0, eq), bucket]);
    const cost = Number(part.slice(dollar + 1, at));
    const windows = part.slice(at + 1).split(',').map(Number);
    groups++;
    args.push(indexOf(keys.returnedTokens(name)), `late.${late.jobId}.${late.grantUs}`, late.grantUs, late.hMs, cost, windows.length);
    for (const windowMs of windows) args.push(indexOf(keys.windowCounter(name, bucket, windowMs)), windowMs);
  }
  if (groups === 0) return;
  await runner.run('returnTokens', callKeys, [groups, ...args]);
  // The job's class waits on a bucket it found full until its room was due: it looks again now (and the
  // job, back in wait, is delivered once it is classified). Other queues' classes look when they were due to.
  for (const [encodedName, bucket] of buckets) {
    await runner.run('wakeBuckets', [queue.keys.wakeups, queue.keys.leaseRoom, queue.marker()], [encodedName, bucket]);
  }
}

/** The queue of the job put back: its classes' wakeups and bullmq's marker. */
export interface LateStartQueue {
  readonly keys: QueueThrottleKeys;
  marker(): string;
}

/** Returns in the background; a return that fails only wastes room until the tokens expire (never lets more through). */
export function returnLateStartInBackground(runner: ScriptRunner | undefined, keys: ThrottleKeys, queue: LateStartQueue, late: LateDelivery, logger: Logger, queueName: string): void {
  if (!runner) return;
  returnLateStart(runner, keys, queue, late).catch((error: unknown) => {
    logger.warn({ queue: queueName, jobId: late.jobId, err: error }, 'could not give back the tokens of a job that did not start in time; they count until they expire');
  });
}
