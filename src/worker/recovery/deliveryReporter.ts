import type { Logger } from 'pino';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { ReportDeliveriesState, runReportDeliveries } from '../../lua/calls/reportDeliveries';
import { DeliveryMemory } from './deliveryMemory';

/** The fields of the namespace's record (`<throttlePrefix>:grantor`) a workers' gather is read from (null: absent). */
export interface GatherRecord {
  readonly hold: string | null;
  readonly gathering: string | null;
}

/**
 * Tells a workers' gather (lua/includes/recoveryHold.lua) what this worker delivered, once per gather, from its
 * memory (src/worker/recovery/deliveryMemory.ts), on the heartbeat that first sees the gather: the namespace's node came
 * back without what it counted, and its throttles go on once every worker that delivered through it has told
 * (lua/reportDeliveries-1.lua). A worker whose memory is not whole does not tell: the throttles it declares then
 * hold for their longest window when the gather ends.
 */
export class DeliveryReporter {
  private reportedEpoch = '';
  /** A gather this worker told (or could not) that had not ended then: its end wakes the queue's classes. */
  private awaitingEnd = false;

  constructor(
    private readonly memory: DeliveryMemory,
    private readonly workerId: string,
    /** "<encoded throttle>:<longest ms>,..." of this worker's declarations. */
    private readonly declared: string,
    private readonly logger: Logger,
    private readonly queue: string,
  ) {}

  /**
   * `record`: the namespace record's `hold` and `gathering` as the heartbeat read them.
   * `vouches`: whether this worker's deliveries all came with tickets (exact delivery with a start deadline).
   * `wake`: the queue's classes look again now (they waited for the gather's latest end, gatherUntil).
   */
  async check(runner: ScriptRunner, keys: ThrottleKeys, record: GatherRecord, vouches: boolean, wake: () => Promise<void>): Promise<void> {
    const { hold, gathering } = record;
    if (hold !== 'gather' || !gathering || gathering === this.reportedEpoch) {
      if (this.awaitingEnd && (hold !== 'gather' || gathering !== this.reportedEpoch)) {
        this.awaitingEnd = false;
        await wake();
      }
      return;
    }
    this.awaitingEnd = true;
    const tells = vouches && this.memory.whole;
    const report = this.memory.report(this.declared);
    const reply = await runReportDeliveries(runner, {
      slot: keys.registryVersion, throttlePrefix: keys.throttlePrefix, workerId: this.workerId, epoch: gathering,
      declared: report.declared, peers: report.peers, history: tells ? report.buckets : null, leaseMs: report.leaseMs,
    });
    this.reportedEpoch = gathering;
    if (!tells) {
      this.logger.warn({ queue: this.queue, workerId: this.workerId }, 'cannot tell the throttle namespace what this worker delivered before its Redis node lost it (no start deadline, leaseMs 0, or more than its memory holds): its throttles hold for their longest window');
      return;
    }
    const ended = reply.state === ReportDeliveriesState.GatherEnded;
    this.logger.info({ queue: this.queue, workerId: this.workerId, counted: reply.counted, gatherEnded: ended },
      'told the throttle namespace what this worker delivered before its Redis node lost it');
    if (ended) {
      this.awaitingEnd = false;
      await wake();
    }
  }
}
