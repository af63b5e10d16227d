import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { Job, Queue } from 'bullmq';
import { markHeldJob } from './heldJobMark';
import { ThrottledQueueView, ThrottledQueueViewOptions } from './throttledQueueView';
import { splitWaitingRange } from './waitingRange';

/**
 * Bull Board's own options of a BullMQAdapter (readOnlyMode, description, ...), passed on as given; each
 * defaults as in Bull Board.
 *
 * @example
 * ```ts
 * new ThrottledBullMQAdapter(paymentsQueue, { readOnlyMode: true, displayName: 'Payments' });
 * ```
 */
export type BoardOptions = NonNullable<ConstructorParameters<typeof BullMQAdapter>[1]>;
type JobStatus = Parameters<BullMQAdapter['getJobs']>[0][number];
type JobCounts = Awaited<ReturnType<BullMQAdapter['getJobCounts']>>;

/**
 * A queue's job counts by status, as Bull Board shows them (jobs): bullmq's own counts, with the jobs a
 * ThrottledWorker holds added to `waiting`. The members are Bull Board's, one per status it knows, all optional
 * in its type; each count bullmq reports is present (0 when there are none).
 */
export interface ThrottledJobCounts extends JobCounts {
  /**
   * bullmq's waiting jobs plus the jobs the throttle layer holds, those being classified included (the
   * `throttled` of getThrottledCount). Always present.
   */
  waiting?: number;
  /** Jobs being processed now, as bullmq counts them. */
  active?: number;
  /** Jobs waiting for their delay to pass, as bullmq counts them. */
  delayed?: number;
  /** Jobs waiting with a priority, as bullmq counts them; held jobs taken from there are counted in `waiting`. */
  prioritized?: number;
  /** Parent jobs waiting for their children to complete, as bullmq counts them. */
  'waiting-children'?: number;
  /** Completed jobs bullmq still keeps. */
  completed?: number;
  /** Failed jobs bullmq still keeps. */
  failed?: number;
  /** Jobs in bullmq 5's paused list (a paused queue's waiting jobs); absent with bullmq 6, which has no such list. */
  paused?: number;
  /** Bull Board's "latest" tab is a status of its own, not a count: bullmq reports none, so this is absent. */
  latest?: number;
}

/**
 * Bull Board's own adapter options (readOnlyMode, displayName, ...), and where the throttle layer's keys are
 * (ThrottledQueueViewOptions). Every one may be left out.
 *
 * @example
 * ```ts
 * createBullBoard({
 *   queues: [new ThrottledBullMQAdapter(paymentsQueue, { readOnlyMode: true, throttlePrefix: 'payments' })],
 *   serverAdapter,
 * });
 * ```
 */
export type ThrottledBullMQAdapterOptions = BoardOptions & ThrottledQueueViewOptions;

/** The status whose list and count the held jobs join. */
const WAITING: JobStatus = 'waiting';

/** A note in the job's logs, as Bull Board shows them; composed on each request, never stored. */
const LOG_NOTE = '[bullmq-throttle, not stored in the job]';

/**
 * Bull Board's BullMQ adapter, with the jobs a ThrottledWorker holds shown as waiting: counted in `waiting`,
 * listed after bullmq's own waiting jobs (paged across both), each named with what holds it
 * (`charge · held by stripe-per-customer[acme]`), and the reason in its logs. Held jobs are in none of bullmq's lists, so
 * the plain adapter shows none of them.
 */
export class ThrottledBullMQAdapter extends BullMQAdapter {
  private readonly view: ThrottledQueueView;
  // BullMQAdapter keeps its queue private.
  private readonly bullQueue: Queue;

  constructor(queue: Queue, options: ThrottledBullMQAdapterOptions = {}) {
    const { throttlePrefix, connection, ...board } = options;
    super(queue, board);
    this.bullQueue = queue;
    this.view = new ThrottledQueueView(queue, { throttlePrefix, connection });
  }

  /**
   * As Bull Board's BullMQAdapter, with the held jobs added to `waiting`. Bull Board calls it for every queue
   * on each poll.
   * @returns bullmq's counts by status (jobs), `waiting` including the jobs the throttle layer holds.
   */
  override async getJobCounts(): Promise<ThrottledJobCounts> {
    const [counts, held] = await Promise.all([super.getJobCounts(), this.view.count()]);
    return { ...counts, [WAITING]: (counts[WAITING] ?? 0) + held };
  }

  /**
   * Every status but `waiting` as bullmq has it. Bull Board asks for several statuses at once on its "latest" tab,
   * each ranged start..end on its own: statuses keep their order, `waiting` (bullmq's, then held) among them.
   */
  override async getJobs(jobStatuses: JobStatus[], start?: number, end?: number): Promise<Job[]> {
    if (!jobStatuses.includes(WAITING)) return super.getJobs(jobStatuses, start, end);
    const runs: JobStatus[][] = [];
    for (const status of jobStatuses) {
      const last = runs[runs.length - 1];
      if (status !== WAITING && last && last[0] !== WAITING) last.push(status);
      else runs.push([status]);
    }
    const pages = await Promise.all(runs.map((run) => (run[0] === WAITING ? this.waitingJobs(start, end) : super.getJobs(run, start, end))));
    return pages.flat();
  }

  /** Positions start..end of bullmq's waiting jobs followed by the held ones. */
  private async waitingJobs(start?: number, end?: number): Promise<Job[]> {
    // 'wait', not 'waiting': bullmq 5 counts a paused queue's list under 'waiting' too, which Bull Board counts and
    // lists as paused; the held jobs must follow exactly the jobs counted in `waiting`.
    const range = splitWaitingRange(await this.bullQueue.getJobCountByTypes('wait'), start, end);
    const [waiting, held] = await Promise.all([
      range.waiting ? super.getJobs([WAITING], range.waiting.start, range.waiting.end) : [],
      range.held ? this.heldJobs(range.held.start, range.held.end) : [],
    ]);
    return [...waiting, ...held];
  }

  private async heldJobs(start: number, end: number): Promise<Job[]> {
    const refs = await this.view.page(start, end);
    const jobs = await Promise.all(refs.map(async (ref) => {
      const job = await super.getJob(ref.id);
      // A held job removed meanwhile has no hash left: it is skipped, as bullmq's getJobs skips such ids.
      return job ? markHeldJob(job, ref.place) : undefined;
    }));
    return jobs.filter((job): job is Job => job !== undefined);
  }

  /** A held job opened on its own page is named as in the list. */
  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    if (!job || !(await this.mayBeHeld(job))) return job;
    const held = await this.view.place(id);
    return held ? markHeldJob(job, held.place) : job;
  }

  /** A held job's logs start with why it is held (ThrottleAdmin.explainJob's reason): its bucket, its limit, when room returns. */
  override async getJobLogs(id: string): Promise<string[]> {
    const logs = await super.getJobLogs(id);
    const job = await super.getJob(id);
    if (!job || !(await this.mayBeHeld(job))) return logs;
    const held = await this.view.place(id);
    if (!held) return logs;
    const reason = held.explanation?.reason ?? 'held: taken from wait, being classified';
    return [`${LOG_NOTE} ${held.explanation ? `held, ${reason}` : reason}`, ...logs];
  }

  /** Held jobs are in none of bullmq's lists: bullmq says 'unknown'. Any other state spares the throttle reads. */
  private async mayBeHeld(job: Job): Promise<boolean> {
    return (await job.getState()) === 'unknown';
  }

  /** Closes what the adapter opened (a connection given as options, a handle to read registry and buckets); not the queue. */
  async close(): Promise<void> {
    await this.view.close();
  }
}
