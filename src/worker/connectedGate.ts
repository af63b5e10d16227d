import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { ThrottleKeys, QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { closeClient, OwnedClient, RedisClient } from '../redis/connection';
import { declarationData } from './declarations/declarationRegistry';
import { JobClassifier } from '../queueState/jobClassifier';
import { PlainWorkerDetector } from '../queueState/plainWorkerDetector';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';
import { TakeReply } from '../delivery/takeNextJobs';
import { Delivery } from '../delivery/Delivery';
import { createDelivery } from '../delivery/createDelivery';
import { rateStartNotice } from './notices/rateStartNotice';
import { JobCompleter } from './completion/jobCompleter';
import { HeldJobPlacer } from './intake/heldJobPlacer';
import { DeclarationLifecycle } from './declarations/DeclarationLifecycle';
import { HeldJobRelease } from '../queueState/heldJobRelease';
import { GatedQueue } from '../bullmq/BullmqAdapter';
import { GateFailures } from './gateFailures';
import { watchConnection } from './watchConnection';
import { reviveEndedConnection } from '../redis/reviveEndedConnection';
import { warnIfEvicting } from '../redis/evictionPolicyWarning';
import { assertWaitAllowed } from '../redis/ReplicaConfirmation';
import { NamespaceCheck } from './declarations/namespaceCheck';
import { encodeSegment } from '../keys/keyEncoding';
import { EVERY_BUCKET, runWakeBuckets } from '../lua/calls/wakeBuckets';
import { NamespaceRecovery } from './recovery/namespaceRecovery';
import { startDeadlineCeilingMs, startDeadlineLateCeilingMs, StartDeadlines } from './lateStarts/startDeadlines';
import { LatePutBacks } from './lateStarts/latePutBacks';
import { ProcessorStarts } from './lateStarts/processorStarts';
import { SlotRequests, SlotServer } from './slots/slotRequests';
import { ProcessedJobs } from './completion/processedJobs';
import { DispatchDelay } from './completion/dispatchDelay';
import { WaitTimeouts } from './completion/waitTimeouts';
import { AttachedQueue, GateOptions } from './gateOptions';
import { GateHeartbeat } from './gateHeartbeat';
import { LateCountNotice } from './notices/lateCountNotice';

/** What a ThrottleGate holds from before it connects, which its connected part works with. */
export interface GateBeforeConnection {
  readonly options: GateOptions;
  readonly workerId: string;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  readonly recovery: NamespaceRecovery;
  readonly failures: GateFailures;
  readonly requests: SlotRequests;
  readonly dispatchDelay: DispatchDelay;
  readonly waitTimeouts: WaitTimeouts;
  readonly attached: AttachedQueue;
  /** True once the worker closes (or its start failed for good). */
  closed(): boolean;
}

/**
 * The part of a ThrottleGate that exists once the worker's connection does: its runners, its delivery
 * (exact or leased, src/delivery/createDelivery.ts), the declarations it registers and keeps alive, and
 * what delivers, completes and puts back jobs through them.
 */
export class ConnectedGate implements SlotServer {
  readonly runner: ScriptRunner;
  /** Runs in the throttle namespace's slot: the worker's own connection, or the grantor option's. */
  readonly namespaceRunner: ScriptRunner;
  private readonly grantorConnection?: OwnedClient;
  readonly delivery: Delivery;
  /** Each delivery's h, and whether its processor may still start (exact delivery; see startDeadlines.ts). */
  readonly deadlines: StartDeadlines;
  readonly lifecycle: DeclarationLifecycle;
  /** What becomes of the jobs this worker runs: costs, ends and Retry-After pauses. */
  readonly jobs: ProcessedJobs;
  readonly completer: JobCompleter;
  /** Jobs lateStart refused, through their put-back's steps (ThrottledWorker.handleFailed calls ready and moved). */
  readonly latePutBacks: LatePutBacks;
  /** Each processor's start against its delivery's deadline (ThrottledWorker's wrapper and callProcessJob). */
  readonly starts: ProcessorStarts;
  readonly heartbeat: GateHeartbeat;
  private readonly placer: HeldJobPlacer;
  private readonly namespaceCheck: NamespaceCheck;
  private readonly backend: GatedQueue;
  private readonly options: GateOptions;
  /** Puts back held jobs of queues no live worker declares any more (see heldJobRelease). */
  private readonly heldRelease: HeldJobRelease;

  constructor(private readonly gate: GateBeforeConnection, private readonly client: RedisClient) {
    const { options, keys, queueKeys, attached, failures } = gate;
    this.options = options;
    this.backend = attached.backend;
    this.runner = new ScriptRunner(client, options.scripts);
    this.lifecycle = new DeclarationLifecycle({
      queue: options.queue, prefix: options.prefix, throttles: options.throttles, declarationTtlMs: options.declarationTtlMs,
      logger: options.logger, workerId: gate.workerId, keys, queueKeys,
      markerKey: attached.backend.keys.marker, closed: gate.closed, onGenerationChange: () => this.reclaimInBackground(),
    });
    const chosen = this.chooseDelivery();
    this.delivery = chosen.delivery;
    this.namespaceRunner = chosen.namespaceRunner;
    this.grantorConnection = chosen.grantorConnection;
    if (chosen.delivery.mode === 'exact') rateStartNotice(options.logger, options.queue, options.throttles, chosen.leaseMs);
    // Exact delivery keeps the guarantee at processor start when asked: h as given, or chosen by the worker ('auto').
    // Leased delivery's deadline is each job's tokens' expiry, h after the request that leased them (fixed).
    const own = options.leaseMs;
    this.deadlines = new StartDeadlines(chosen.delivery.mode === 'leased' ? chosen.leaseMs : own === 'auto' ? undefined : own, () => startDeadlineCeilingMs(this.throttles()), () => startDeadlineLateCeilingMs(this.throttles()));
    this.lifecycle.open(this.runner, this.namespaceRunner, {
      workerId: gate.workerId, queue: options.queue, prefix: options.prefix, declarations: options.throttles.map(declarationData), attributes: Boolean(options.attributes),
      delivery: chosen.delivery.mode, declarationTtlMs: options.declarationTtlMs, leaseMs: chosen.leaseMs,
      ...(options.fairness ? { fairness: options.fairness } : {}),
    });
    const classifier = new JobClassifier(options.attributes, options.logger, options.queue);
    const config = () => this.lifecycle.config;
    this.jobs = new ProcessedJobs({
      queue: options.queue, logger: options.logger, keys, queueKeys, workerId: gate.workerId, declarationTtlMs: options.declarationTtlMs, config, classifier,
      namespaceRunner: this.namespaceRunner, workerClient: client, delivery: this.delivery, dispatchDelay: gate.dispatchDelay,
    });
    this.namespaceCheck = new NamespaceCheck(options.namespace, options.throttles.map((t) => t.name), options.declarationTtlMs, options.logger, { queue: options.queue });
    this.placer = new HeldJobPlacer({
      queue: options.queue, queueKeys, classifier, runner: this.runner, bullmqKeys: attached.backend.keys, client, config,
      refreshConfig: () => this.lifecycle.refresh(false),
      closed: gate.closed,
      report: (what, error) => failures.report(what, error),
      warn: (fields, message) => options.logger.warn(fields, message),
    });
    this.completer = new JobCompleter({
      queue: options.queue, backend: this.backend, runner: this.runner, refusedTokensKey: queueKeys.refusedTokens,
      completeAlone: (jobId, args) => this.backend.moveToFinished(jobId, args),
      closing: () => gate.closed() || Boolean(this.backend.closing),
      lockDuration: attached.lockDuration,
      report: (task, error) => failures.report(task, error),
      recovered: (task) => failures.recovered(task),
    });
    this.latePutBacks = new LatePutBacks({
      delivery: this.delivery, runner: this.runner, queue: { keys: queueKeys, marker: attached.backend.keys.marker }, logger: options.logger, queueName: options.queue,
    });
    this.starts = new ProcessorStarts({
      deadlines: this.deadlines, latePutBacks: this.latePutBacks, recovery: gate.recovery, delivery: this.delivery,
      lateCounts: new LateCountNotice(options.logger, options.queue),
      report: (task, error) => failures.report(task, error),
    });
    this.heldRelease = new HeldJobRelease(options.prefix, options.logger);
    this.heartbeat = new GateHeartbeat({
      options, keys, queueKeys, failures, recovery: gate.recovery, lifecycle: this.lifecycle, heldRelease: this.heldRelease,
      runner: this.runner, namespaceRunner: this.namespaceRunner, workerClient: client, namespaceClient: this.namespaceClient(),
      eventsKey: attached.backend.keys.events, delivery: this.delivery, deadlines: this.deadlines, jobs: this.jobs, namespaceCheck: this.namespaceCheck,
      detector: new PlainWorkerDetector(client, options.prefix, options.queue, options.logger, options.declarationTtlMs),
      closed: gate.closed, wake: () => this.wakeThrottles(),
    });
  }

  /** Exact where the queue's keys and its throttles' share a slot, leased otherwise (src/delivery/createDelivery.ts). */
  private chooseDelivery(): ReturnType<typeof createDelivery> {
    const { options, workerId, keys, queueKeys, attached, recovery, failures } = this.gate;
    return createDelivery({
      queue: options.queue, prefix: options.prefix, workerId, keys, queueKeys,
      logger: options.logger, scripts: options.scripts, leaseMs: options.leaseMs, durableRedis: options.durableRedis ?? false,
      grantor: options.grantor, client: this.client, runner: this.runner, startDeadlineMs: () => this.deadlines.currentMs(),
      call: (leaseMs) => ({
        bullmqKeys: attached.backend.keys, queueKeys, throttlePrefix: keys.throttlePrefix,
        lockDuration: attached.lockDuration, leaseMs, limiter: attached.limiter, durableRedis: options.durableRedis ?? false,
        knownNodeId: recovery.knownNodeId,
      }),
      throttles: () => this.throttles().map((t) => encodeSegment(t.name)),
      concurrencyThrottles: () => this.throttles().filter((t) => t.maxInFlight !== undefined).map((t) => encodeSegment(t.name)),
      holdMs: () => attached.lockDuration + attached.stalledInterval,
      concurrency: options.concurrency,
      onTokens: () => this.tokensArrived(),
      report: (what, error) => failures.report(what, error),
      knownNodeId: () => recovery.knownNodeId,
      seenAlive: () => recovery.seenAlive(),
    });
  }

  /**
   * Between calls no room returns but with time, or through what this process sees (SlotRequests' unasked waits):
   * exact delivery (leased tokens arrive as the grantor grants them), and no concurrency (any job's end frees room).
   */
  roomReturnsOnlyWithTime(): boolean {
    return this.delivery.mode === 'exact' && !this.throttles().some((t) => t.maxInFlight !== undefined);
  }

  /** The queue's effective throttles as the worker holds them now (none before it has a config). */
  private throttles(): readonly EffectiveThrottle[] {
    return this.lifecycle.config?.throttles ?? [];
  }

  /** Registers this worker's declarations and checks what it needs of Redis (ThrottleGate.start tries again while Redis is unreachable). */
  async register(): Promise<void> {
    const { logger, queue, throttles } = this.options;
    await this.lifecycle.refresh(true);
    await forgetRemovedJobs(this.runner, this.backend.keys.events, this.gate.queueKeys);
    await this.namespaceCheck.check(this.namespaceRunner);
    await assertWaitAllowed(this.client);
    logger.info({ queue, workerId: this.gate.workerId, throttles: throttles.map((t) => t.name) }, 'throttle declarations registered');
    watchConnection(this.client, logger, queue);
    reviveEndedConnection(this.client, logger, queue, () => !this.gate.closed());
    if (this.grantorConnection) reviveEndedConnection(this.grantorConnection.client, logger, queue, () => !this.gate.closed());
    this.gate.failures.recovered('registering throttle declarations');
    void warnIfEvicting(this.client, logger);
  }

  /** A start that failed for good: the registration goes at once, and the grantor option's connection closes. */
  async abandon(): Promise<void> {
    await this.lifecycle.abandon();
    await this.closeGrantor().catch(() => undefined);
  }

  flushCompletions(): void {
    this.completer.flush();
  }

  async take(tokens: string[], name: string): Promise<TakeReply> {
    // Read in the same turn as the exact delivery reads it for the call's lease (ExactDelivery.take's context).
    const hMs = this.deadlines.currentMs();
    const sentAt = performance.now();
    const reply = await this.delivery.take({ tokens, name, gen: this.lifecycle.config?.gen ?? '' });
    if (this.delivery.mode === 'exact') {
      const repliedAt = performance.now();
      if (hMs > 0) this.deadlines.delivered(reply.jobs.map((job) => job.id), sentAt, hMs, reply.nowUs, reply.tickets, repliedAt);
      this.gate.recovery.delivered(reply.tickets, repliedAt, hMs);
    } else if (reply.tickets) {
      this.deadlines.deliveredLeased(reply.jobs.map((job) => job.id), sentAt, reply.nowUs, reply.tickets);
    }
    if (reply.jobs.length > 0) this.gate.recovery.learnIdentity(this.namespaceClient(), this.gate.keys);
    return reply;
  }

  answered(reply: TakeReply): void {
    this.gate.dispatchDelay.clockSample(reply.nowMs);
    // Only a queue whose throttles declare maxWait has jobs delivered to be failed (lua/includes/deadlines.lua).
    if (reply.jobs.length > 0 && this.lifecycle.config?.throttles.some((t) => t.maxWaitMs !== undefined)) this.gate.waitTimeouts.note(reply.jobs);
    if (reply.stale > 0) this.reclaimInBackground();
    if (reply.dropped > 0) this.options.logger.debug({ queue: this.options.queue, dropped: reply.dropped }, 'dropped held jobs that were removed from outside');
    // Another worker published a new generation (a throttle came or went): catch up and reclassify.
    if (this.lifecycle.config && reply.gen !== this.lifecycle.config.gen) this.heartbeat.refreshInBackground();
  }

  /** Takes a batch of newly added jobs and holds each in its class; resolves to how many were placed. */
  classifyBatch(): Promise<number> {
    return this.placer.classifyBatch();
  }

  /** Moves held jobs of classes from an older config generation back through classification. */
  reclaimInBackground(): void {
    if (!this.gate.closed()) this.placer.reclaimInBackground();
  }

  /** The queue's classes waiting on any of its throttles look again now (lua/wakeBuckets-3.lua). */
  private async wakeThrottles(): Promise<void> {
    const wake = { wakeups: this.gate.queueKeys.wakeups, leaseRoom: this.gate.queueKeys.leaseRoom, marker: this.backend.keys.marker };
    for (const throttle of this.throttles()) await runWakeBuckets(this.runner, { ...wake, throttle: throttle.name, bucket: EVERY_BUCKET });
    this.gate.requests.wakeParked();
  }

  /** The connection that reaches the namespace's slot (the grantor option's, or the worker's own). */
  private namespaceClient(): RedisClient {
    return this.grantorConnection?.client ?? this.client;
  }

  /** Leased tokens went into the queue's pools: slots waiting here look again, and bullmq's blocked main loop wakes. */
  private tokensArrived(): void {
    if (this.gate.closed()) return;
    this.gate.requests.wakeParked();
    void this.wakeBullmq().catch(() => undefined);
  }

  async wakeBullmq(): Promise<void> {
    if (this.gate.closed()) return;
    const client = (await this.backend.client) as unknown as RedisClient;
    await client.zadd(this.backend.keys.marker, 0, '0');
  }

  /** Closes the grantor option's connection, which the worker owns (none without the option). */
  async closeGrantor(): Promise<void> {
    if (this.grantorConnection) await closeClient(this.grantorConnection);
  }

  /**
   * ThrottleGate.stop's part once connected, after the heartbeat and the slots have stopped: resolves to a
   * function that withdraws this worker's declarations, on a connection of its own (see ThrottleGate.stop).
   */
  async stop(): Promise<() => Promise<void>> {
    await this.placer.settled();
    await this.heartbeat.settled();
    const closeGrantor = () => this.closeGrantor();
    let spare: RedisClient;
    try {
      spare = ((await this.backend.client) as unknown as { duplicate(): RedisClient }).duplicate();
      // Its errors reach withdraw (logged there); without a listener ioredis prints each failed reconnect as unhandled.
      spare.on('error', () => undefined);
    } catch {
      return closeGrantor;
    }
    return () => this.withdraw(spare);
  }

  private async withdraw(spare: RedisClient): Promise<void> {
    try {
      const runner = new ScriptRunner(spare, this.options.scripts);
      const namespaceRunner = this.grantorConnection ? this.namespaceRunner : runner;
      const { lastOfQueue, lapsedQueues } = await this.lifecycle.withdraw(runner, namespaceRunner);
      await this.delivery.stop({ queue: runner, grantor: namespaceRunner });
      // The last worker declaring throttles on the queue: its held jobs go back to bullmq's lists before close() resolves.
      await this.heldRelease.release(runner, [...(lastOfQueue ? [this.options.queue] : []), ...lapsedQueues]);
    } catch (error) {
      this.options.logger.warn({ queue: this.options.queue, err: error }, 'could not withdraw throttle declarations; they lapse on their own');
    } finally {
      await spare.quit().catch(() => spare.disconnect());
      await this.closeGrantor();
    }
  }
}
