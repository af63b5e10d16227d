import type { Delivery } from '../../delivery/Delivery';
import type { LateDelivery } from '../../delivery/lateStartTickets';
import type { LateCountNotice } from '../notices/lateCountNotice';
import type { NamespaceRecovery } from '../recovery/namespaceRecovery';
import type { LatePutBacks } from './latePutBacks';
import { lateDeliveryOf, PendingStart, StartDeadlines } from './startDeadlines';

/** What a processor's start check works with, of the connected gate. */
export interface ProcessorStartsContext {
  readonly deadlines: StartDeadlines;
  readonly latePutBacks: LatePutBacks;
  readonly recovery: NamespaceRecovery;
  readonly delivery: Delivery;
  readonly lateCounts: LateCountNotice;
  report(task: string, error: unknown): void;
}

/**
 * Each processor's start, against its delivery's deadline (src/worker/lateStarts/startDeadlines.ts): a job too late
 * goes back held (latePutBacks), and one started in time whose processor returned from its synchronous start past
 * the deadline has its tokens counted longer (Delivery.countLateStart).
 */
export class ProcessorStarts {
  constructor(private readonly context: ProcessorStartsContext) {}

  /** The processor is about to start on the job: its delivery when it came too late to start (then put back). */
  lateStart(jobId: string | undefined): LateDelivery | undefined {
    const late = this.context.deadlines.lateStart(jobId);
    if (late) this.putBack(late);
    return late;
  }

  /** The job's delivery, taken for its processor's start (ThrottledWorker's wrapper; undefined: no start deadline). */
  pendingStart(jobId: string | undefined): PendingStart | undefined {
    return this.context.deadlines.take(jobId);
  }

  /** A delivery taken whose processor came to start at `now`, too late: it goes back held. */
  refuseStart(delivery: PendingStart, now: number): LateDelivery {
    const late = this.context.deadlines.refuse(delivery, now);
    this.putBack(late);
    return late;
  }

  /**
   * A delivery taken whose processor was called at `checkedAt`, in time, and returned from its synchronous start at
   * `returnedAt`. Past the deadline by then (the process was descheduled after the check, or the start itself took
   * that long), the processor may have reached the API after its tokens stop counting: they count longer, as if
   * the delivery call had carried the lease the start took (lua/countLateStart-n.lua says why that is in time,
   * for a pause shorter than the window; one that landed too late is counted and said: LateCountNotice).
   */
  started(delivery: PendingStart, checkedAt: number, returnedAt: number): void {
    const { deadlines, recovery } = this.context;
    deadlines.started(delivery, checkedAt);
    const tookMs = returnedAt - delivery.sentAt;
    if (tookMs <= delivery.deadlineMs) return;
    const toLeaseMs = Math.ceil(tookMs) + 1;
    deadlines.countedLonger();
    recovery.countedLonger(toLeaseMs);
    this.context.delivery.countLateStart(lateDeliveryOf(delivery), toLeaseMs).then((missed) => {
      if (missed === 0) return;
      deadlines.countedTooLate();
      this.context.lateCounts.missed(tookMs, delivery.deadlineMs, missed);
    }, (error) => this.context.report('counting a late start for longer', error));
  }

  private putBack(late: LateDelivery): void {
    this.context.recovery.putBack(late.ticket, late.repliedAt);
    this.context.latePutBacks.begin(late);
  }
}
