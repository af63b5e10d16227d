import { deadlineOf, LateDelivery } from '../../delivery/lateStartTickets';
import type { Limit } from '../../declarations/Limit';
import { BatchLimit } from './batchLimit';
import { START_DEADLINE_CEILING_MS, START_DEADLINE_FLOOR_MS } from '../../options/defaults';

/** h is at most this share of the shortest window the worker's throttles count: it costs a sustained N / (W + h). */
const WINDOW_SHARE = 30;
/** ...but the ceiling is never below this: shorter, most starts on a busy machine come too late and go back. */
const SHORT_WINDOW_CEILING_MS = 20;
/** h before enough processors have started to measure how long a start takes. */
const INITIAL_MS = 50;
/** The chosen h covers the p99 of the latest starts' ages with this much to spare (and START_SPARE_MS at least). */
const HEADROOM = 1.5;
const SAMPLES = 1000;
/** h is chosen again after this many starts (sorting the samples at every start would cost more than it tells). */
const CHOOSE_EVERY = 100;
/**
 * A processor starts only this much before its deadline at the latest: the check is not the start itself, and a
 * process descheduled between the two (a loaded machine, a collector pause) starts it later than it checked.
 * A tenth of the deadline, but at least START_SPARE_MS (at most half of it): with a tenth alone, a CI run with
 * every core busy once saw 101 processor starts in a 1 s window of 100 (h 33 ms, 3.3 ms to spare), and one
 * with a fixed leaseMs of 15 saw 4 starts in a window of 3 (1.5 ms to spare); a pause between the check and
 * the start is the one way to either we found. The cost is the rare job that comes in that last stretch,
 * put back; a chosen h grows to cover it (it is chosen from the ages checked).
 */
const START_BY_SHARE = 0.9;
const START_SPARE_MS = 4;
/** The latest age (ms) at which a delivery with this deadline may still start. */
export function latestStartMs(deadlineMs: number): number {
  return deadlineMs - Math.min(deadlineMs / 2, Math.max(deadlineMs * (1 - START_BY_SHARE), START_SPARE_MS));
}
/** A delivery whose processor has not started this long after is forgotten (far past any h). */
const FORGET_AFTER_MS = 60_000;

/**
 * The longest h a worker chooses for these throttles: the ceiling, or a thirtieth of their shortest window when
 * that is shorter (a 1 s window sustains 30/31 of N/W: a twentieth measured 0.949, at the 0.95 line), but at
 * least 20 ms (a 100 ms window sustains 5/6 of it rather than half, and fewer of its jobs go back for starting
 * late than with h 10 ms).
 */
export function startDeadlineCeilingMs(throttles: readonly { readonly limits: readonly Limit[] }[]): number {
  return ceilingsOf(throttles).usual;
}

/**
 * The longest h a worker chooses while its starts come late even with calls of one or two jobs: a quarter of the
 * shortest window, at most LATE_CEILING_MS (never below the usual ceiling). Putting jobs back helps only when
 * smaller batches start in time; when delivered jobs wait longer than h whatever the batch, every one goes back and
 * each put-back's scripts load Redis and the event loop further. Ten queues' workers of 50 slots in one process,
 * sharing a binding limit of 2,000/s, ran 110 jobs/s that way and put back nine jobs in ten with h held at 33 ms
 * (`npm run bench -- bindingLimit`): bullmq's main loop fetches for its free slots one after another and takes a
 * queued job to its processor only between those fetches, so with a thousand slots refilling as room returned,
 * delivered jobs waited 260-380 ms (median of the late ones) before their processor was called. A longer h costs
 * N / (W + h) while it lasts; the collapse cost all but a twentieth.
 */
export function startDeadlineLateCeilingMs(throttles: readonly { readonly limits: readonly Limit[] }[]): number {
  return ceilingsOf(throttles).late;
}
const LATE_CEILING_MS = 250;

/** Both ceilings of a config: asked on every delivery call, of a config that changes rarely, so worked out once per config. */
function ceilingsOf(throttles: readonly { readonly limits: readonly Limit[] }[]): { usual: number; late: number } {
  let found = ceilings.get(throttles);
  if (found === undefined) {
    let shortest = Infinity;
    for (const throttle of throttles) for (const limit of throttle.limits) shortest = Math.min(shortest, limit.windowMs);
    const usual = Math.max(SHORT_WINDOW_CEILING_MS, Math.min(START_DEADLINE_CEILING_MS, Math.floor(shortest / WINDOW_SHARE)));
    found = { usual, late: Math.max(usual, Math.min(LATE_CEILING_MS, Math.floor(shortest / 4))) };
    ceilings.set(throttles, found);
  }
  return found;
}
const ceilings = new WeakMap<object, { usual: number; late: number }>();
/**
 * Over this share of late starts among the last CHOOSE_EVERY, once calls bring at most RAISE_AT_BATCH jobs (BatchLimit
 * has had its say: smaller batches did not bring starts in time), h may rise to the late ceiling.
 */
const RAISE_AT_LATE_SHARE = 0.25;
const RAISE_AT_BATCH = 2;

/** What a worker's start deadline looks like now (ThrottledWorker.startDeadline). */
export interface StartDeadlineStats {
  /** h (ms): every delivery counts for W + h, and its processor starts within h of the call that delivered it or not at all. */
  readonly hMs: number;
  /** Whether the worker chooses h from what it measures (leaseMs left out) rather than leaseMs. */
  readonly adaptive: boolean;
  /** Processors started under a deadline (jobs a window counted) since the worker began. */
  readonly started: number;
  /** Jobs put back held because their processor would have started more than h after their delivery. */
  readonly putBack: number;
  /**
   * Processors called in time that returned from their synchronous start later than their delivery was counted for
   * (the process was descheduled, or the start itself took that long): their tokens then counted longer.
   */
  readonly countedLonger: number;
  /**
   * Of those, the starts whose longer count landed too late: a window had released their tokens (its room may have
   * been granted again), or a rate had granted since. The process was paused longer than a window, or a rate's
   * interval: starts around them may exceed the limit. A warning says so too.
   */
  readonly countedTooLate: number;
}

/**
 * hMs: the lease the delivery was counted with (what returning it needs); deadlineMs: by when it must start;
 * batch: how many jobs the call that delivered it brought (they start one after another).
 */
export interface PendingStart {
  readonly jobId: string;
  readonly sentAt: number;
  readonly hMs: number;
  readonly deadlineMs: number;
  /** sentAt + latestStartMs(deadlineMs): a processor called later than this does not start. */
  readonly latestAt: number;
  readonly grantUs: number;
  readonly ticket: string;
  readonly repliedAt: number;
  readonly batch: number;
}

/** What a delivery was counted with, to give back (a late start) or count longer (a start late after its check). */
export function lateDeliveryOf(delivery: PendingStart): LateDelivery {
  return { jobId: delivery.jobId, hMs: delivery.hMs, deadlineMs: delivery.deadlineMs, grantUs: delivery.grantUs, ticket: delivery.ticket, repliedAt: delivery.repliedAt };
}

/**
 * The processor is what spends a delivery, so the guarantee is kept where the API sees it by the design's rule 1
 * with the processor as the spender: every delivery counts for W + h (the delivery call carries h as its lease),
 * and a job a window counted whose processor would start more than h after its delivery does not start
 * (ThrottledWorker puts it back held, what it was counted in given back: src/worker/lateStarts/lateStartReturn.ts). Then
 * the starts in any window W come from deliveries within W + h of one another, which the counters keep to N.
 *
 * A delivery's age is measured on this process's monotonic clock from the moment the call that delivered it was
 * sent: the script ran after that, so the age is never less than the time since the delivery, whatever the
 * clocks of Redis and this machine say. h is chosen from the ages of the latest starts (their p99, with
 * headroom, between the floor and the ceiling), so that a busy event loop lengthens it instead of putting jobs
 * back, and it costs a sustained ceiling of N / (W + h), not N / W.
 */
export class StartDeadlines {
  private readonly pending = new Map<string, PendingStart>();
  private readonly ages: number[] = [];
  private nextAge = 0;
  private sinceChosen = 0;
  private chosenMs: number;
  private startedCount = 0;
  private readonly batches = new BatchLimit();
  private swept = 0;
  private putBackCount = 0;
  private countedLongerCount = 0;
  private countedTooLateCount = 0;

  /**
   * `fixedMs`: leaseMs as given (0: no deadline: deliveries count at processedOn only); undefined: chosen here, at
   * most `ceilingMs()` (startDeadlineCeilingMs of the worker's throttles as they are now).
   */
  /** Raised to the late ceiling (startDeadlineLateCeilingMs) until what starts need fits the usual one again. */
  private raised = false;
  private lateSinceChosen = 0;

  constructor(
    private readonly fixedMs: number | undefined,
    private readonly ceilingMs: () => number = () => START_DEADLINE_CEILING_MS,
    /** The ceiling while most starts come late (startDeadlineLateCeilingMs); by default the usual one. */
    private readonly lateCeilingMs: () => number = ceilingMs,
  ) {
    this.chosenMs = fixedMs ?? INITIAL_MS;
  }

  /** The h a delivery call sent now carries. */
  currentMs(): number {
    return this.fixedMs === undefined ? Math.min(this.chosenMs, this.raised ? this.lateCeilingMs() : this.ceilingMs()) : this.chosenMs;
  }

  /**
   * A delivery call sent at `sentAt` (performance.now()) with h `hMs` delivered these jobs; the script counted
   * them at `grantUs` (Redis time), in the windows `tickets` say (in the order of `jobIds`; '' for none).
   */
  delivered(jobIds: readonly string[], sentAt: number, hMs: number, grantUs: number, tickets: readonly string[] = [], repliedAt: number = performance.now()): void {
    if (hMs <= 0) return;
    this.sweep(sentAt);
    // Only a window (counting for W + h) or a rate granted with a lease (its rh) needs the deadline: a job counted
    // by neither (a concurrency, a rate without a lease, no throttle) gains nothing from it, and putting it back
    // could waste a rate's token (a rate keeps what it granted unless it is its latest grant). A job counted with another lease than h (a rate's
    // shorter one, the longer one of buckets far from full) has its deadline first ("<D>#"), and must start within that.
    jobIds.forEach((id, i) => {
      if (!tickets[i]) return;
      const { deadlineMs = hMs, buckets } = deadlineOf(tickets[i]);
      this.pending.set(id, { jobId: id, sentAt, hMs, deadlineMs, latestAt: sentAt + latestStartMs(deadlineMs), grantUs, ticket: buckets, repliedAt, batch: jobIds.length });
    });
  }

  /**
   * Leased delivery: a call sent at `sentAt` delivered these jobs at `nowUs` (the queue node's clock); each must
   * start before the earliest expiry of the tokens it spent (its ticket's "<expiry us>!"), counted against W + h
   * up to then. The call ran after `sentAt`, so `sentAt` plus the time left at `nowUs` is never later than the
   * expiry, whatever the clocks of Redis and this machine say.
   */
  deliveredLeased(jobIds: readonly string[], sentAt: number, nowUs: number, tickets: readonly string[] = []): void {
    this.sweep(sentAt);
    jobIds.forEach((id, i) => {
      const ticket = tickets[i];
      const bang = ticket ? ticket.indexOf('!') : -1;
      if (bang < 0) return;
      const leftMs = (Number(ticket.slice(0, bang)) - nowUs) / 1000;
      const deadlineMs = Math.max(0, leftMs);
      this.pending.set(id, { jobId: id, sentAt, hMs: deadlineMs, deadlineMs, latestAt: sentAt + latestStartMs(deadlineMs), grantUs: nowUs, ticket: ticket.slice(bang + 1), repliedAt: performance.now(), batch: jobIds.length });
    });
  }

  /** A processor is about to start on the job: the delivery when it is late and must not start (the job goes back held). */
  lateStart(jobId: string | undefined, now: number = performance.now()): LateDelivery | undefined {
    const delivery = this.take(jobId);
    if (!delivery) return undefined;
    if (now > delivery.latestAt) return this.refuse(delivery, now);
    this.started(delivery, now);
    return undefined;
  }

  /**
   * The job's delivery, no longer waiting for its processor (undefined: it has no start deadline). The caller
   * reads the clock right after, calls the processor at once when it is in time (latestAt), and tells which
   * (refuse, started) after: nothing of this class runs between the clock and the processor.
   */
  take(jobId: string | undefined): PendingStart | undefined {
    const delivery = jobId === undefined ? undefined : this.pending.get(jobId);
    if (delivery) this.pending.delete(jobId!);
    return delivery;
  }

  /** A delivery taken whose processor came to start at `now`, after its latestAt: it goes back held. */
  refuse(delivery: PendingStart, now: number): LateDelivery {
    this.sample(now - delivery.sentAt, true);
    this.putBackCount++;
    this.batches.late(delivery.sentAt, delivery.batch);
    return lateDeliveryOf(delivery);
  }

  /** A delivery taken whose processor was called at `checkedAt`, in time. */
  started(delivery: PendingStart, checkedAt: number): void {
    this.sample(checkedAt - delivery.sentAt, false);
    this.startedCount++;
    this.batches.onTime();
  }

  /** A processor that returned from its synchronous start after its deadline, whose tokens then counted longer (countLateStart). */
  countedLonger(): void {
    this.countedLongerCount++;
  }

  /** Of those, one whose longer count landed too late (a window had released its tokens, or a rate had granted since). */
  countedTooLate(): void {
    this.countedTooLateCount++;
  }

  /** The most jobs one delivery call should bring now (BatchLimit): fewer while starts come late. */
  batchLimit(): number {
    return this.batches.limit;
  }

  stats(): StartDeadlineStats {
    return { hMs: this.currentMs(), adaptive: this.fixedMs === undefined, started: this.startedCount, putBack: this.putBackCount, countedLonger: this.countedLongerCount, countedTooLate: this.countedTooLateCount };
  }

  /**
   * Jobs that never reached their processor (failed by bullmq's own checks before it, or the worker closed) leave
   * their entry: it goes once it is far past any deadline. (Not on the job's end: by then the job may be delivered
   * again, put back a moment before, and its new entry must stay.)
   */
  private sweep(sentAt: number): void {
    if (this.pending.size === 0 || sentAt - this.swept <= FORGET_AFTER_MS) return;
    for (const [id, delivery] of this.pending) if (sentAt - delivery.sentAt > FORGET_AFTER_MS) this.pending.delete(id);
    this.swept = sentAt;
  }

  private sample(ageMs: number, late: boolean): void {
    if (this.fixedMs !== undefined) return;
    if (this.ages.length < SAMPLES) this.ages.push(ageMs);
    else this.ages[this.nextAge] = ageMs;
    this.nextAge = (this.nextAge + 1) % SAMPLES;
    if (late) this.lateSinceChosen++;
    if (++this.sinceChosen < CHOOSE_EVERY) return;
    const lateShare = this.lateSinceChosen / this.sinceChosen;
    this.sinceChosen = 0;
    this.lateSinceChosen = 0;
    const sorted = [...this.ages].sort((a, b) => a - b);
    const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))];
    const needed = Math.max(START_DEADLINE_FLOOR_MS, Math.ceil(Math.max(p99 * HEADROOM, p99 + START_SPARE_MS)));
    // Raised while putting jobs back does not bring their starts within the usual ceiling; lowered once what
    // starts need fits it again.
    if (lateShare > RAISE_AT_LATE_SHARE && this.batches.limit <= RAISE_AT_BATCH) this.raised = true;
    else if (needed <= this.ceilingMs()) this.raised = false;
    this.chosenMs = Math.min(this.raised ? this.lateCeilingMs() : this.ceilingMs(), needed);
  }
}
