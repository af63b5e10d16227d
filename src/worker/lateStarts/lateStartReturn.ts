import type { Logger } from 'pino';
import type { Delivery } from '../../delivery/Delivery';
import { bucketsOfTicket, LateDelivery } from '../../delivery/lateStartTickets';
import { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { runLateStartPutBack } from '../../lua/calls/lateStartPutBack';
import { PutBackStart, runMarkPutBack } from '../../lua/calls/markPutBack';

/** The queue of the job put back: its classes' wakeups and bullmq's marker. */
export interface LateStartQueue {
  readonly keys: QueueThrottleKeys;
  readonly marker: string;
}

/** Where a put-back's steps run and report. */
export interface PutBackContext {
  readonly delivery: Delivery;
  readonly runner: ScriptRunner;
  readonly queue: LateStartQueue;
  readonly logger: Logger;
  readonly queueName: string;
}

/**
 * Marks the job put back (lua/markPutBack-2.lua), before bullmq moves it to wait: wherever a delivery meets it
 * there, it goes first among its priority again, as bullmq places a job its processor rate-limited; `start` says
 * whether the start its delivery counted in attemptsStarted is taken back (a late start: its processor never ran)
 * or kept (RetryAfterError: it ran). A mark that fails only costs the job its place (and that start) (logged).
 */
export function markPutBack(context: PutBackContext, jobId: string, start: PutBackStart): Promise<void> {
  const keys = context.queue.keys;
  return runMarkPutBack(context.runner, { putBack: keys.putBack, job: keys.bullmqJob(jobId), jobId, start }).then(() => undefined, (error: unknown) => {
    context.logger.warn({ queue: context.queueName, jobId, err: error }, 'could not mark a job put back; it goes back behind the jobs held meanwhile');
  });
}

/**
 * What the job was counted in goes back (Delivery.giveBackLate: the counters' windows in exact delivery, the
 * grantor's grants in leased), so that putting it back costs its buckets nothing (without this, a limit of 3 per
 * hour would lose an hour's room to a job that never ran); a rate takes back only its latest grant
 * (lua/includes/rateCounter.lua's rateKind.giveBack), and concurrency returns as the job ends. A return that fails only
 * wastes room until the tokens expire (never lets more through), and is logged; this never throws.
 */
export async function giveBack(context: PutBackContext, late: LateDelivery): Promise<void> {
  if (bucketsOfTicket(late.ticket).length === 0) return;
  await context.delivery.giveBackLate(late).catch((error: unknown) => {
    context.logger.warn({ queue: context.queueName, jobId: late.jobId, err: error }, 'could not give back the tokens of a job that did not start in time; they count until they expire');
  });
}

/**
 * Once the job is back in wait: its delivery stops counting in the queue's statistics (it counts once more when
 * it is delivered again) and in a leased queue's history (a grantor that lost its counts would count it again),
 * and the classes waiting on its buckets look again (lua/lateStartPutBack-n.lua, in the queue's slot). Logged,
 * never thrown: a failure leaves a statistic one too high (or a spend in the history) and a class waiting until
 * its own wakeup.
 */
export async function notePutBack(context: PutBackContext, late: LateDelivery): Promise<void> {
  const buckets = bucketsOfTicket(late.ticket);
  if (buckets.length === 0) return;
  const { keys, marker } = context.queue;
  await runLateStartPutBack(context.runner, {
    wakeups: keys.wakeups, leaseRoom: keys.leaseRoom, marker, deliveredAtUs: late.grantUs, queueBase: keys.base,
    buckets: buckets.map((b) => {
      const stats = keys.throttleStats(b.name);
      return { bucketId: b.bucketId, units: b.cost, stats: stats.stats, recent: stats.recent };
    }),
  }).catch((error: unknown) => {
    context.logger.warn({ queue: context.queueName, jobId: late.jobId, err: error }, 'could not note a job put back for starting late');
  });
}
