import { ScriptRunner } from '../lua/scripts';
import type { LateDelivery } from './lateStartTickets';
import { TakeReply } from './takeNextJobs';

/** What one delivery call asks: a job for each slot's lock token, as the worker named `name`. */
export interface DeliveryCall {
  readonly tokens: readonly string[];
  readonly name: string;
  /** The config generation the worker holds ('' before it has one). */
  readonly gen: string;
}

/**
 * How a ThrottleGate's deliveries are counted against the throttles: the one seam between the two modes.
 * - ExactDelivery: the queue's keys and its throttles' share a slot (or a server); one script counts and
 *   delivers (lua/takeNextJobs-19.lua).
 * - LeasedDelivery: the throttles are counted elsewhere (another slot, node or Redis): the worker leases
 *   tokens from the namespace's grantor and the queue's script spends them (lua/takeLeasedJobs-19.lua).
 */
export interface Delivery {
  readonly mode: 'exact' | 'leased';
  /** The next jobs that fit, each locked with its slot's token and moved to active. */
  take(call: DeliveryCall): Promise<TakeReply>;
  /** A job this worker ran has ended (completed, failed, moved): the concurrency it held returns. */
  jobEnded(jobId: string): Promise<void>;
  /** A job delivered here did not start in time (src/worker/lateStarts/startDeadlines.ts): what it was counted in stops counting. */
  giveBackLate(late: LateDelivery): Promise<void>;
  /**
   * A started job whose processor returned from its synchronous start later than its delivery was counted for: its
   * tokens count until its delivery plus W plus `toLeaseMs`, its rates as if granted that much later (exact
   * delivery: lua/countLateStart-n.lua; leased delivery: its grants, by as much as the start took past their
   * expiry, lua/countLateLeased-1.lua). Resolves to how many of its limits the call came too late for (a window
   * had released its tokens, or a rate had granted since: starts around this one may exceed them).
   */
  countLateStart(late: LateDelivery, toLeaseMs: number): Promise<number>;
  /**
   * The namespace's node is rebuilding its counts (a gather: lua/includes/grantorRecovery.lua): tells it what
   * this queue delivered lately if the queue has not yet, so that an idle queue does not keep the gather waiting.
   */
  tellGather(): Promise<void>;
  /** The worker is closing; gives back what it holds, through connections still open. */
  stop(runners: StopRunners): Promise<void>;
}

/** Connections that outlive the worker's own, for what a delivery gives back as it closes. */
export interface StopRunners {
  readonly queue: ScriptRunner;
  readonly grantor: ScriptRunner;
}
