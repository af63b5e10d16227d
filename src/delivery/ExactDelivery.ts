import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { lateExactReturns, lateStartCounts, LateDelivery } from './lateStartTickets';
import { runCountLateStart } from '../lua/calls/countLateStart';
import { InFlightRelease } from './inFlightRelease';
import { Delivery, DeliveryCall } from './Delivery';
import { ReplicaConfirmation } from '../redis/ReplicaConfirmation';
import { SentinelVouch } from '../redis/sentinelVouch';
import { runReturnTokens } from '../lua/calls/returnTokens';
import { runTakeNextJobs, TakeCall, TakeReply } from '../lua/calls/takeNextJobs';

/** What a delivery call needs of its gate besides the call itself. */
export type DeliveryContext = () => Omit<TakeCall, 'tokens' | 'workerName' | 'gen'>;

/**
 * A call that reaches Redis this long after it was sent counts no delivery (lua/includes/exactRoom.lua): it
 * may have waited on a frozen master that was replaced meanwhile. Calls reach Redis within ms; a master is
 * replaced only after cluster-node-timeout (or Sentinel's down-after-milliseconds), at least a second.
 */
const LATE_CALL_US = 1_000_000;

/** Counts and delivers in one script, in the slot the queue and its throttles share: exact, no lease. */
export class ExactDelivery implements Delivery {
  readonly mode = 'exact';
  /** The Redis clock of the last reply, and this process's clock when it came. */
  private lastReply?: { nowUs: number; atMs: number };

  /** A delivery starts once a replica holds it, when the node has replicas (a deposed master's would not count). */
  private readonly confirmation: ReplicaConfirmation;

  /** `nodeKey`: a HASH of the queue's slot that describes its node (ThrottleKeys' queue(...).node). */
  constructor(
    private readonly runner: () => ScriptRunner,
    private readonly context: DeliveryContext,
    nodeKey: string,
    private readonly inFlight: InFlightRelease,
    private readonly keys: ThrottleKeys,
    /** On a Sentinel connection: who vouches for a master that lost its last replica. */
    sentinel?: SentinelVouch,
  ) {
    this.confirmation = new ReplicaConfirmation(() => nodeKey, sentinel);
  }

  /** The job's entries in its buckets' in-flight counters go (lua/releaseInFlight-1.lua). */
  jobEnded(jobId: string): Promise<void> {
    return this.inFlight.jobEnded(jobId);
  }

  /** The windows that counted the job stop counting it (lua/returnTokens-n.lua, in this same slot). */
  async giveBackLate(late: LateDelivery): Promise<void> {
    const returns = lateExactReturns(late);
    if (returns.length === 0) return;
    await runReturnTokens(this.runner(), { keys: this.keys, grants: returns });
  }

  /**
   * Its windows that counted it with a shorter lease count it until its delivery plus W plus `toLeaseMs`, and its
   * rates go on as if its grant had come that much later (lua/countLateStart-n.lua).
   */
  async countLateStart(late: LateDelivery, toLeaseMs: number): Promise<number> {
    const { windows, rates } = lateStartCounts(late, toLeaseMs);
    if (windows.length === 0 && rates.length === 0) return 0;
    const reply = await runCountLateStart(this.runner(), { keys: this.keys, grantUs: late.grantUs, toLeaseMs, windows, rates });
    return reply.missed;
  }

  /** Exact workers tell a workers' gather what they remember (src/worker/recovery/deliveryReporter.ts), not their queue's records. */
  async tellGather(): Promise<void> {
    return undefined;
  }

  async take(call: DeliveryCall): Promise<TakeReply> {
    const last = this.lastReply;
    const lateAfterUs = last ? Math.round(last.nowUs + (performance.now() - last.atMs) * 1000 + LATE_CALL_US) : 0;
    const reply = await runTakeNextJobs(this.runner(), { ...this.context(), tokens: call.tokens, workerName: call.name, gen: call.gen, lateAfterUs }, this.confirmation);
    this.lastReply = { nowUs: reply.nowUs, atMs: performance.now() };
    return reply;
  }

  async stop(): Promise<void> {
    // Nothing is held outside the counters.
  }
}
