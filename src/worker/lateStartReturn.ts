import type { Logger } from 'pino';
import type { Delivery } from '../delivery/Delivery';
import { bucketsOfTicket, LateDelivery } from '../delivery/lateStartTickets';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';

/** The queue of the job put back: its classes' wakeups and bullmq's marker. */
export interface LateStartQueue {
  readonly keys: QueueThrottleKeys;
  marker(): string;
}

/**
 * A job whose processor did not start in time: what it was counted in goes back (Delivery.giveBackLate: the
 * counters' windows in exact delivery, the grantor's grants in leased), so that putting it back costs its
 * buckets nothing (without this, a limit of 3 per hour would lose an hour's room to a job that never ran); rates
 * keep what they granted (lua/includes/rateCounter.lua), and concurrency returns as the job ends. Then its
 * delivery stops counting in the queue's statistics (it counts once more when it is delivered again) and the
 * classes waiting on its buckets look again (lua/lateStartPutBack-n.lua, in the queue's slot).
 */
export async function returnLateStart(delivery: Delivery, queueRunner: ScriptRunner, queue: LateStartQueue, late: LateDelivery): Promise<void> {
  const buckets = bucketsOfTicket(late.ticket);
  if (buckets.length === 0) return;
  await delivery.giveBackLate(late);
  const statsKeys = buckets.flatMap((b) => {
    const stats = queue.keys.throttleStats(b.name);
    return [stats.stats, stats.recent];
  });
  await queueRunner.run(
    'lateStartPutBack',
    [queue.keys.wakeups, queue.keys.leaseRoom, queue.marker(), ...statsKeys],
    [Math.floor(late.grantUs / 1000), ...buckets.map((b) => b.bucketId)],
  );
}

/**
 * Marks the job put back (lua/markPutBack-1.lua), before bullmq moves it to wait: wherever a delivery meets it
 * there, it goes first among its priority again, as bullmq places a job its processor rate-limited. A mark that
 * fails only costs the job its place (logged).
 */
export function markPutBackQuietly(queueRunner: ScriptRunner | undefined, queue: LateStartQueue, jobId: string, logger: Logger, queueName: string): Promise<void> {
  if (!queueRunner) return Promise.resolve();
  return queueRunner.run('markPutBack', [queue.keys.putBack], [jobId]).then(() => undefined, (error: unknown) => {
    logger.warn({ queue: queueName, jobId, err: error }, 'could not mark a job put back for starting late; it goes back behind the jobs held meanwhile');
  });
}

/**
 * Returns without throwing: a return that fails only wastes room until the tokens expire (never lets more
 * through), and is logged. Resolves once the return is done or has failed.
 */
export function returnLateStartQuietly(delivery: Delivery | undefined, queueRunner: ScriptRunner | undefined, queue: LateStartQueue, late: LateDelivery, logger: Logger, queueName: string): Promise<void> {
  if (!delivery || !queueRunner) return Promise.resolve();
  return returnLateStart(delivery, queueRunner, queue, late).catch((error: unknown) => {
    logger.warn({ queue: queueName, jobId: late.jobId, err: error }, 'could not give back the tokens of a job that did not start in time; they count until they expire');
  });
}
