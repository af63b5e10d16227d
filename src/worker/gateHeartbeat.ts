import { ThrottleKeys, QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { RedisClient } from '../redis/connection';
import { PlainWorkerDetector } from '../queueState/plainWorkerDetector';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';
import { HeldJobRelease } from '../queueState/heldJobRelease';
import { Delivery } from '../delivery/Delivery';
import { DeclarationLifecycle } from './declarations/DeclarationLifecycle';
import { NamespaceCheck } from './declarations/namespaceCheck';
import { GateFailures } from './gateFailures';
import { RecoveryHoldNotice } from './notices/recoveryHoldNotice';
import { PauseNotice } from './notices/pauseNotice';
import { HeldNotice } from './notices/heldNotice';
import { NamespaceRecovery } from './recovery/namespaceRecovery';
import { StartDeadlines } from './lateStarts/startDeadlines';
import { ProcessedJobs } from './completion/processedJobs';
import { GateOptions } from './gateOptions';

/** What a connected gate's heartbeat works with. */
export interface HeartbeatContext {
  readonly options: GateOptions;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  readonly failures: GateFailures;
  readonly recovery: NamespaceRecovery;
  readonly lifecycle: DeclarationLifecycle;
  readonly heldRelease: HeldJobRelease;
  readonly runner: ScriptRunner;
  /** Runs in the throttle namespace's slot: the worker's own connection, or the grantor option's. */
  readonly namespaceRunner: ScriptRunner;
  readonly workerClient: RedisClient;
  /** The connection that reaches the namespace's slot (the grantor option's, or the worker's own). */
  readonly namespaceClient: RedisClient;
  /** bullmq's events stream of the queue. */
  readonly eventsKey: string;
  readonly delivery: Delivery;
  readonly deadlines: StartDeadlines;
  readonly jobs: ProcessedJobs;
  readonly namespaceCheck: NamespaceCheck;
  readonly detector: PlainWorkerDetector;
  closed(): boolean;
  /** The queue's classes waiting on any of its throttles look again now. */
  wake(): Promise<void>;
}

/**
 * Every third of the declarations' TTL: the declarations refreshed (a crashed worker's lapse), held jobs of
 * lapsed queues put back, removed jobs forgotten, and the checks and notices that follow what other workers
 * and the namespace's node do.
 */
export class GateHeartbeat {
  private timer?: NodeJS.Timeout;
  private refreshing?: Promise<void>;
  private readonly holdNotice: RecoveryHoldNotice;
  private readonly pauseNotice: PauseNotice;
  private readonly heldNotice: HeldNotice;

  constructor(private readonly context: HeartbeatContext) {
    const { logger, queue, emit } = context.options;
    this.holdNotice = new RecoveryHoldNotice(logger, queue, emit);
    this.pauseNotice = new PauseNotice(logger, queue, emit);
    this.heldNotice = new HeldNotice(emit ?? (() => undefined));
  }

  start(): void {
    this.timer = setInterval(() => { void this.beat(); }, Math.max(50, Math.floor(this.context.options.declarationTtlMs / 3)));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** A beat now, unless one started this way is under way (another worker published a new generation). */
  refreshInBackground(): void {
    this.refreshing ??= this.beat().finally(() => { this.refreshing = undefined; });
  }

  /** Resolves once the beat refreshInBackground began (if any) has ended. */
  async settled(): Promise<void> {
    await this.refreshing;
  }

  private async beat(): Promise<void> {
    const { lifecycle, runner, namespaceRunner, keys, queueKeys, failures } = this.context;
    try {
      await lifecycle.refresh(false);
      if (!this.context.closed()) await this.context.heldRelease.release(runner, lifecycle.takeLapsedQueues());
      await forgetRemovedJobs(runner, this.context.eventsKey, queueKeys);
      await this.context.detector.check(lifecycle.liveEntries);
      await this.context.namespaceCheck.check(namespaceRunner);
      await this.context.recovery.beat({
        runner: namespaceRunner, client: this.context.namespaceClient, keys, liveEntries: lifecycle.liveEntries,
        exact: this.context.delivery.mode === 'exact', vouches: this.context.deadlines.currentMs() > 0, wake: this.context.wake,
        tellGather: async () => { await this.context.delivery.tellGather(); },
      });
      await this.holdNotice.check(this.context.namespaceClient, keys, lifecycle.config?.throttles ?? []);
      await this.pauseNotice.check(this.context.namespaceClient, keys, lifecycle.config?.throttles ?? []);
      await this.heldNotice.check(this.context.workerClient, queueKeys, lifecycle.config?.throttles ?? []);
      await this.context.jobs.publishDispatchDelay();
      failures.recovered('throttle heartbeat');
    } catch (error) {
      failures.report('throttle heartbeat', error);
    }
  }
}
