import type { Logger } from 'pino';
import { returnTokensCall, ReturnedGrant } from '../grant/returnTokensCall';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { decodeSegment } from '../keys/keyEncoding';
import { ScriptRunner } from '../lua/scripts';
import { LateDelivery } from './startDeadlines';

/** The queue of the job put back: its classes' wakeups and bullmq's marker. */
export interface LateStartQueue {
  readonly keys: QueueThrottleKeys;
  marker(): string;
}

/** What a ticket says the job was noted in: "<encoded name>=<bucket>$<cost>@<window ms>,..." joined by '|' (no windows where none counted it). */
function grantsOfTicket(late: LateDelivery): (ReturnedGrant & { encodedName: string; bucketId: string })[] {
  return late.ticket.split('|').filter(Boolean).map((part) => {
    const at = part.lastIndexOf('@');
    const dollar = part.lastIndexOf('$', at);
    const bucketId = part.slice(0, dollar);
    const eq = bucketId.indexOf('=');
    return {
      bucketId,
      encodedName: bucketId.slice(0, eq),
      name: decodeSegment(bucketId.slice(0, eq)),
      bucket: bucketId.slice(eq + 1),
      nonce: `late.${late.jobId}.${late.grantUs}`,
      grantUs: late.grantUs,
      leaseMs: late.hMs,
      count: Number(part.slice(dollar + 1, at)),
      windows: part.slice(at + 1).split(',').filter(Boolean).map(Number),
    };
  });
}

/**
 * Gives back what a job whose processor did not start in time was counted in (lua/returnTokens-n.lua), so that
 * putting it back costs its buckets nothing: without this, a limit of 3 per hour would lose an hour's room to a
 * job that never ran. Each (job, throttle) is returned once whatever is retried (the throttle's returned-set);
 * rates keep what they granted (lua/includes/rateCounter.lua), and concurrency returns as the job ends. Then its
 * delivery stops counting in the queue's statistics (it counts once more when it is delivered again) and the
 * classes waiting on its buckets look again (lua/lateStartPutBack-n.lua).
 */
export async function returnLateStart(runner: ScriptRunner, keys: ThrottleKeys, queue: LateStartQueue, late: LateDelivery): Promise<void> {
  const grants = grantsOfTicket(late);
  if (grants.length === 0) return;
  const counted = grants.filter((grant) => grant.windows.length > 0);
  if (counted.length > 0) {
    const call = returnTokensCall(keys, counted);
    await runner.run('returnTokens', call.keys, call.args);
  }
  const statsKeys = grants.flatMap((grant) => {
    const stats = queue.keys.throttleStats(grant.name);
    return [stats.stats, stats.recent];
  });
  await runner.run(
    'lateStartPutBack',
    [queue.keys.wakeups, queue.keys.leaseRoom, queue.marker(), ...statsKeys],
    [Math.floor(late.grantUs / 1000), ...grants.map((grant) => grant.bucketId)],
  );
}

/** Returns in the background; a return that fails only wastes room until the tokens expire (never lets more through). */
export function returnLateStartInBackground(runner: ScriptRunner | undefined, keys: ThrottleKeys, queue: LateStartQueue, late: LateDelivery, logger: Logger, queueName: string): void {
  if (!runner) return;
  returnLateStart(runner, keys, queue, late).catch((error: unknown) => {
    logger.warn({ queue: queueName, jobId: late.jobId, err: error }, 'could not give back the tokens of a job that did not start in time; they count until they expire');
  });
}
