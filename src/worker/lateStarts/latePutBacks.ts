import type { LateDelivery } from '../../delivery/lateStartTickets';
import { PutBackStart } from '../../lua/calls/markPutBack';
import { giveBack, markPutBack, notePutBack, PutBackContext } from './lateStartReturn';

interface PuttingBack {
  late: LateDelivery;
  /** The mark, and in leased delivery the tokens' return: done before bullmq moves the job to wait. */
  ready: Promise<void>;
  /** Whether the tokens go back only once the job is in wait (exact delivery). */
  giveBackAfterMove: boolean;
}

/**
 * The steps of putting back a job whose processor would have started too late (ThrottledWorker throws
 * LateStartError, and bullmq moves it to wait as a rate-limited job), in the order that keeps it first and loses
 * no room:
 *   1. it is marked put back (it goes first among its priority when a delivery meets it in wait);
 *   2. bullmq moves it to wait;
 *   3. its room goes back and the classes waiting on its buckets look again.
 * In exact delivery the room goes back after the move: a delivery reads the counters themselves, so the job, in
 * wait and first, takes its room back before a job held behind it. In leased delivery it goes back before the
 * move: a lease asked of the grantor between the move and the return would be answered "full until the window
 * ends" and the job's class would wait that long (a limit of 3 per hour stalled for the hour), so the grantor
 * has the tokens before the job asks; a class already waiting may lease them first.
 */
export class LatePutBacks {
  /** By job id, until bullmq has moved the job back to wait (a worker closing may leave some: a few bytes). */
  private readonly pending = new Map<string, PuttingBack>();

  constructor(private readonly context: PutBackContext) {}

  /** lateStart refused the job: steps that come before the move begin now. */
  begin(late: LateDelivery): void {
    const giveBackAfterMove = this.context.delivery.mode !== 'leased';
    const ready = Promise.all([markPutBack(this.context, late.jobId, PutBackStart.TakeBack), giveBackAfterMove ? undefined : giveBack(this.context, late)]).then(() => undefined);
    this.pending.set(late.jobId, { late, ready, giveBackAfterMove });
  }

  /**
   * A processor sent the job back with RetryAfterError: marked, before bullmq moves it, to go first among its
   * priority again (as bullmq places a job its processor rate-limited). It ran, so its start stays counted.
   */
  markRetryAfter(jobId: string | undefined): Promise<void> {
    return jobId === undefined ? Promise.resolve() : markPutBack(this.context, jobId, PutBackStart.Keep);
  }

  /** Before bullmq moves the job back to wait. */
  async ready(jobId: string | undefined): Promise<void> {
    await (jobId === undefined ? undefined : this.pending.get(jobId)?.ready);
  }

  /**
   * Once bullmq has moved it back to wait (or failed to: its lock lost, the stalled check puts it back; room that
   * counted until it expired would only be wasted): the rest, in the background.
   */
  moved(jobId: string | undefined): void {
    const putting = jobId === undefined ? undefined : this.pending.get(jobId);
    if (!putting) return;
    this.pending.delete(jobId!);
    void (async () => {
      if (putting.giveBackAfterMove) await giveBack(this.context, putting.late);
      await notePutBack(this.context, putting.late);
    })();
  }
}
