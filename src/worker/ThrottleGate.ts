import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ThrottleSpec } from '../declarations/ThrottleSpec';
import { ThrottleKeys, QueueThrottleKeys } from '../keys/ThrottleKeys';
import { LuaScript, ScriptRunner } from '../lua/scripts';
import { closeClient, ConnectionInput, OwnedClient, RedisClient } from '../redis/connection';
import { declarationData } from './declarations/declarationRegistry';
import { AttributesFunction, JobClassifier } from '../queueState/jobClassifier';
import { QueueConfig } from '../queueState/queueConfig';
import { PlainWorkerDetector } from '../queueState/plainWorkerDetector';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';
import { TakeReply } from '../delivery/takeNextJobs';
import { Delivery } from '../delivery/Delivery';
import { createDelivery } from '../delivery/createDelivery';
import { rateStartNotice } from './notices/rateStartNotice';
import { JobCompleter } from './completion/jobCompleter';
import { HeldJobPlacer } from './intake/heldJobPlacer';
import { DeclarationLifecycle } from './declarations/DeclarationLifecycle';
import { DeliveryRequest } from './slots/deliveryTuning';
import { HeldJobRelease } from '../queueState/heldJobRelease';
import { FinishArgs, Finished, Gate, GatedQueue } from '../bullmq/BullmqAdapter';
import { GateFailures } from './gateFailures';
import { watchConnection } from './watchConnection';
import { clientOrRefusal } from './clientOrRefusal';
import { warnIfEvicting } from '../redis/evictionPolicyWarning';
import { assertWaitAllowed } from '../redis/ReplicaConfirmation';
import { assertNamespaceUsable } from '../keys/hashSlotTag';
import { NamespaceCheck } from './declarations/namespaceCheck';
import { encodeSegment } from '../keys/keyEncoding';
import { EVERY_BUCKET, runWakeBuckets } from '../lua/calls/wakeBuckets';
import { RecoveryHoldNotice } from './notices/recoveryHoldNotice';
import { LateDelivery } from '../delivery/lateStartTickets';
import { NamespaceRecovery } from './recovery/namespaceRecovery';
import { startDeadlineCeilingMs, startDeadlineLateCeilingMs, StartDeadlines } from './lateStarts/startDeadlines';
import { LatePutBacks } from './lateStarts/latePutBacks';
import { PauseNotice } from './notices/pauseNotice';
import { HeldNotice } from './notices/heldNotice';
import { EmitThrottleEvent } from './notices/throttleEvents';
import { SlotRequests } from './slots/slotRequests';
import { ProcessedJobs } from './completion/processedJobs';

export interface GateOptions {
  queue: string;
  prefix: string;
  /** The throttle namespace: throttles of one name are shared within it. */
  namespace: string;
  throttles: readonly ThrottleSpec[];
  attributes?: AttributesFunction;
  logger: Logger;
  declarationTtlMs: number;
  /** h; undefined: 'auto' in exact delivery (the worker chooses h), DEFAULT_LEASE_MS in leased delivery. */
  leaseMs?: number | 'auto';
  /** See ThrottledWorkerOptions.durableRedis. */
  durableRedis?: boolean;
  /** Throttles counted on another Redis (leased delivery); by default on the worker's own connection. */
  grantor?: { connection: ConnectionInput };
  /** The worker's concurrency as it is now. */
  concurrency: () => number;
  /** False while requests must not wait for room (the worker is paused). */
  mayWait: () => boolean;
  /** Internal: tests swap in scripts built with a steerable clock. */
  scripts?: Map<string, LuaScript>;
  /** Emits `error` on the worker (GateFailures decides when). */
  onError?: (error: Error) => void;
  /** Emits the throttle events on the worker (src/worker/notices/throttleEvents.ts). */
  emit?: EmitThrottleEvent;
  /** Whether a lock token is one bullmq's main loop fetches with (getNextJob's are the caller's own). */
  mainLoopToken?: (token: string) => boolean;
  /** Emits bullmq's `drained` on the worker. */
  emitDrained?: () => void;
}

/**
 * Gates every path by which bullmq hands a job to a worker on the throttles: the line's adapter
 * (src/bullmq/) puts a throttled delivery in place of bullmq's moveToActive and turns fetch-next off in
 * completions, failures and retries, fetching through the same gate instead (the calls of `Gate`). It
 * also keeps this worker's declarations registered.
 */
export class ThrottleGate implements Gate {
  readonly workerId = randomUUID();
  /** What this worker remembers for when the namespace's node loses its counts (src/worker/recovery/namespaceRecovery.ts). */
  private readonly recovery: NamespaceRecovery;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  private rejectReady!: (error: Error) => void;
  private backend?: GatedQueue;
  private runner?: ScriptRunner;
  /** Runs in the throttle namespace's slot: the worker's own connection, or the grantor option's. */
  private namespaceRunner?: ScriptRunner;
  private grantorConnection?: OwnedClient;
  private delivery?: Delivery;
  private workerClient?: RedisClient;
  private leaseMs = 0;
  private completer?: JobCompleter;
  private readonly lifecycle: DeclarationLifecycle;
  private readonly placer: HeldJobPlacer;
  private detector?: PlainWorkerDetector;
  private heartbeat?: NodeJS.Timeout;
  private closed = false;
  private workerName = '';
  private lockDuration = 30_000;
  private stalledInterval = 30_000;
  /** The worker's bullmq `limiter` option: the delivery script applies it as bullmq's moveToActive does. */
  private limiter?: { max: number; duration: number };
  private readonly failures: GateFailures;
  private failedStart?: Error;
  private readonly namespaceCheck: NamespaceCheck;
  private readonly holdNotice: RecoveryHoldNotice;
  private readonly classifier: JobClassifier;
  private readonly pauseNotice: PauseNotice;
  private readonly heldNotice: HeldNotice;
  /** What becomes of the jobs this worker runs: their processors' timing, costs, ends and Retry-After pauses. */
  readonly jobs: ProcessedJobs;
  /** Each delivery's h, and whether its processor may still start (exact delivery; see startDeadlines.ts). */
  deadlines = new StartDeadlines(0);

  constructor(private readonly options: GateOptions) {
    this.keys = new ThrottleKeys(options.prefix, options.namespace);
    assertNamespaceUsable(`ThrottledWorker('${options.queue}')`, 'throttlePrefix (by default the prefix)', options.namespace, this.keys.namespaceBase);
    this.queueKeys = this.keys.queue(options.queue);
    this.recovery = new NamespaceRecovery(this.workerId, options.throttles, options.logger, options.queue);
    this.jobs = new ProcessedJobs({
      queue: options.queue, logger: options.logger, keys: this.keys, queueKeys: this.queueKeys, workerId: this.workerId,
      declarationTtlMs: options.declarationTtlMs, config: () => this.lifecycle.config, classifier: () => this.classifier,
      runner: () => this.runner, namespaceRunner: () => this.namespaceRunner, workerClient: () => this.workerClient,
      delivery: () => this.delivery,
    });
    this.holdNotice = new RecoveryHoldNotice(options.logger, options.queue, options.emit);
    this.classifier = new JobClassifier(options.attributes, options.logger, options.queue);
    this.pauseNotice = new PauseNotice(options.logger, options.queue, options.emit);
    this.heldNotice = new HeldNotice(options.emit ?? (() => undefined));
    this.lifecycle = new DeclarationLifecycle({
      queue: options.queue, prefix: options.prefix, throttles: options.throttles, declarationTtlMs: options.declarationTtlMs,
      logger: options.logger, workerId: this.workerId, keys: this.keys, queueKeys: this.queueKeys,
      markerKey: () => this.backend!.keys.marker, closed: () => this.closed, onGenerationChange: () => this.reclaimInBackground(),
    });
    this.namespaceCheck = new NamespaceCheck(options.namespace, options.throttles.map((t) => t.name), options.declarationTtlMs, options.logger, { queue: options.queue });
    this.placer = new HeldJobPlacer({
      queue: options.queue,
      queueKeys: this.queueKeys,
      classifier: this.classifier,
      runner: () => this.runner!,
      bullmqKeys: () => this.backend!.keys,
      client: async () => (await this.backend!.client) as unknown as RedisClient,
      config: () => this.lifecycle.config,
      refreshConfig: () => this.lifecycle.refresh(false),
      closed: () => this.closed,
      report: (what, error) => this.failures.report(what, error),
      warn: (fields, message) => options.logger.warn(fields, message),
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // A start-up failure is reported through run()/waitUntilReady(); never as an unhandled rejection.
    this.ready.catch(() => undefined);
    this.failures = new GateFailures(options, async () => this.backend && ((await this.backend.client) as unknown as RedisClient), () => this.closed);
  }

  /** The error the start failed with (already emitted as `error` once), if it failed. */
  get startFailure(): Error | undefined {
    return this.failedStart;
  }

  get currentConfig(): QueueConfig | undefined {
    return this.lifecycle.config;
  }

  /**
   * Takes bullmq's side of the worker (src/bullmq/: bullmq 6's backend, or what bullmq 5's adapter builds from
   * its Worker). The adapter maps the line's hooks onto deliver, finishThenFetch, complete/completeFromArgs
   * and fetchAfterMove, so that every delivery goes through the throttles.
   */
  attach(queue: GatedQueue, workerOptions: { name?: string; lockDuration?: number; stalledInterval?: number; limiter?: { max: number; duration: number } }): void {
    this.backend = queue;
    this.workerName = workerOptions.name ?? '';
    this.lockDuration = workerOptions.lockDuration ?? 30_000;
    this.stalledInterval = workerOptions.stalledInterval ?? 30_000;
    this.limiter = workerOptions.limiter;
    this.completer = new JobCompleter({
      queue: this.options.queue,
      backend: queue,
      runner: () => this.runner,
      refusedTokensKey: this.queueKeys.refusedTokens,
      completeAlone: (jobId, args) => queue.moveToFinished(jobId, args),
      closing: () => this.closed || Boolean(queue.closing),
      lockDuration: () => this.lockDuration,
      report: (task, error) => this.failures.report(task, error),
      recovered: (task) => this.failures.recovered(task),
    });
  }

  /** bullmq's main loop asks for a job (or getNextJob, or a slot after a delayed job): a moveToActive reply. */
  deliver(token: string, name?: string): Promise<unknown[]> {
    const mainLoop = this.options.mainLoopToken?.(token) ?? false;
    return this.takeHandover(token) ?? this.requests.submit({ token, name: name ?? this.workerName, kind: 'fetch', waits: 0, mainLoop });
  }

  /** The main loop's last fetch was answered with a pass (SlotRequests.submit): bullmq's `drained` on it is not one. */
  get passing(): boolean {
    return this.requests.passing;
  }

  private fetchesNext(fetchNext: boolean): boolean {
    return fetchNext && !this.backend?.closing && !this.closed;
  }

  /**
   * A completion or failure made with fetch-next off: the slot's next job is fetched through the gate.
   * The next fetch goes out right behind the completion on the same connection (one round trip, not
   * two). Should Redis refuse a batched completion, the delivery script fetches nothing for its slot (the
   * completion marks the slot's token refused first: lua/completeJobs-n.lua), as bullmq fetches only after
   * a completion that succeeded; adapters hand failures, which are not batched, over once they are recorded.
   * When ThrottledWorker expects it, the completion is reported without waiting for the next job, which it
   * then takes with takeHandover.
   */
  async finishThenFetch<T extends Finished>(finishing: Promise<T>, token: string, fetchNext: boolean): Promise<T> {
    const handOver = this.handoversExpected.delete(token);
    if (!this.fetchesNext(fetchNext)) return finishing;
    const next = this.moveToActive(token, this.workerName, 'next');
    const done = await finishing.catch(async (error: unknown) => {
      if (handOver) next.catch(() => undefined);
      else await next.catch(() => undefined);
      throw error;
    });
    if (handOver) {
      // No next job in the result (an empty one would have bullmq emit 'drained'): it is handed over after.
      done.result = undefined;
      // Taken by ThrottledWorker right after (whose take handles a rejection); one never taken is not unhandled.
      next.catch(() => undefined);
      this.handovers.set(token, next);
      return done;
    }
    done.result = await next;
    return done;
  }

  /** Completes a job in a batch (JobCompleter), without fetching: as bullmq 6's backend.moveToCompleted answers. */
  complete(job: never, returnValue: unknown, removeOnComplete: never, token: string): Promise<{ result: unknown; finishedOn: unknown }> {
    return this.completer!.complete(job, returnValue, removeOnComplete, token);
  }

  /** Completes a job in a batch from moveToFinished's arguments (fetch-next off): as bullmq's moveToFinished answers. */
  completeFromArgs(jobId: string, args: FinishArgs): Promise<unknown[]> {
    return this.completer!.completeFromArgs(jobId, args);
  }

  /**
   * After a move to delayed made with fetch-next off: the slot's next job through the gate when fetchNext.
   * As bullmq's moveToDelayed, the answer is a job or nothing (`result`, the move's own answer), never a
   * rate-limit delay or a time to look again.
   */
  async fetchAfterMove(result: unknown, token: string | undefined, fetchNext: boolean): Promise<unknown> {
    if (!this.fetchesNext(fetchNext) || !token) return result;
    const next = await this.moveToActive(token, this.workerName, 'fetch');
    return next[0] ? next : result;
  }

  /** Registers this worker's declarations (retrying while Redis is unreachable) and starts the heartbeat. */
  async start(): Promise<void> {
    const backend = this.backend;
    if (!backend) throw new Error('ThrottleGate.start() before attach()');
    const { logger, queue, declarationTtlMs } = this.options;
    let backoffMs = 100;
    for (;;) {
      if (this.closed) return this.rejectReady(new Error(`ThrottledWorker for '${queue}' closed before it started`));
      try {
        const client = await clientOrRefusal(backend);
        this.runner ??= new ScriptRunner(client, this.options.scripts);
        this.workerClient = client;
        if (!this.delivery) this.adoptDelivery(client);
        this.lifecycle.open(this.runner, this.namespaceRunner!, {
          workerId: this.workerId, queue, prefix: this.options.prefix, declarations: this.options.throttles.map(declarationData), attributes: Boolean(this.options.attributes),
          delivery: this.delivery!.mode, declarationTtlMs, leaseMs: this.leaseMs,
        });
        this.detector ??= new PlainWorkerDetector(client, this.options.prefix, queue, logger, declarationTtlMs);
        await this.lifecycle.refresh(true);
        await forgetRemovedJobs(this.runner, backend.keys.events, this.queueKeys);
        await this.namespaceCheck.check(this.namespaceRunner!);
        await assertWaitAllowed(client);
        logger.info({ queue, workerId: this.workerId, throttles: this.options.throttles.map((t) => t.name) }, 'throttle declarations registered');
        watchConnection(client, logger, queue);
        this.failures.recovered('registering throttle declarations');
        void warnIfEvicting(client, logger);
        break;
      } catch (error) {
        const failure = await this.failures.atStart(error);
        if (failure) {
          await this.lifecycle.abandon();
          // close() finds the gate closed and does nothing more: the grantor option's connection closes here.
          if (this.grantorConnection) await closeClient(this.grantorConnection).catch(() => undefined);
          this.closed = true;
          this.failedStart = failure;
          return this.rejectReady(failure);
        }
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
    this.heartbeat = setInterval(() => { void this.beat(); }, Math.max(50, Math.floor(declarationTtlMs / 3)));
    this.heartbeat.unref();
    this.resolveReady();
  }

  private refreshing?: Promise<void>;

  private refreshInBackground(): void {
    this.refreshing ??= this.beat().finally(() => { this.refreshing = undefined; });
  }

  private async beat(): Promise<void> {
    try {
      await this.lifecycle.refresh(false);
      if (!this.closed) await this.heldRelease.release(this.runner!, this.lifecycle.takeLapsedQueues());
      await forgetRemovedJobs(this.runner!, this.backend!.keys.events, this.queueKeys);
      await this.detector?.check(this.lifecycle.liveEntries);
      await this.namespaceCheck.check(this.namespaceRunner!);
      await this.recovery.beat({
        runner: this.namespaceRunner!, client: this.namespaceClient(), keys: this.keys, liveEntries: this.lifecycle.liveEntries,
        exact: this.delivery?.mode === 'exact', vouches: this.deadlines.currentMs() > 0, wake: () => this.wakeThrottles(),
        tellGather: async () => { await this.delivery?.tellGather(); },
      });
      await this.holdNotice.check(this.namespaceClient(), this.keys, this.lifecycle.config?.throttles ?? []);
      await this.pauseNotice.check(this.namespaceClient(), this.keys, this.lifecycle.config?.throttles ?? []);
      await this.heldNotice.check(this.workerClient!, this.queueKeys, this.lifecycle.config?.throttles ?? []);
      await this.jobs.publishDispatchDelay();
      this.failures.recovered('throttle heartbeat');
    } catch (error) {
      this.failures.report('throttle heartbeat', error);
    }
  }

  /** The queue's classes waiting on any of its throttles look again now (lua/wakeBuckets-3.lua). */
  private async wakeThrottles(): Promise<void> {
    const wake = { wakeups: this.queueKeys.wakeups, leaseRoom: this.queueKeys.leaseRoom, marker: this.backend!.keys.marker };
    for (const throttle of this.lifecycle.config?.throttles ?? []) await runWakeBuckets(this.runner!, { ...wake, throttle: throttle.name, bucket: EVERY_BUCKET });
    this.requests.wakeParked();
  }

  /**
   * One delivery attempt for one of the worker's slots. Requests that arrive while a delivery call is in
   * flight are served together by the next call, each with its own lock token, so a busy worker pays the
   * script's fixed cost once per batch and no job is ever fetched ahead of a slot that asked for it.
   */
  moveToActive(token: string, name: string, kind: DeliveryRequest['kind']): Promise<unknown[]> {
    return this.requests.submit({ token, name, kind, waits: 0 });
  }

  // Read when serving, after the constructor has set ready and failures.
  private readonly requests = new SlotRequests({
    ready: () => this.ready,
    failures: () => this.failures,
    closed: () => this.closed,
    mayWait: () => this.options.mayWait(),
    concurrency: () => this.options.concurrency(),
    maxBatch: () => this.deadlines.batchLimit(),
    flushCompletions: () => this.completer?.flush(),
    take: (tokens, name) => this.takeNext(tokens, name),
    answered: (reply) => {
      this.jobs.dispatchDelay.clockSample(reply.nowMs);
      if (reply.stale > 0) this.reclaimInBackground();
      if (reply.dropped > 0) this.options.logger.debug({ queue: this.options.queue, dropped: reply.dropped }, 'dropped held jobs that were removed from outside');
      // Another worker published a new generation (a throttle came or went): catch up and reclassify.
      if (this.lifecycle.config && reply.gen !== this.lifecycle.config.gen) this.refreshInBackground();
    },
    classifyBatch: () => this.classifyBatch(),
    wakeBullmq: () => this.wakeBullmq(),
    emitDrained: () => this.options.emitDrained?.(),
  });

  /** Hands every waiting request back to bullmq with no job (the worker pauses). */
  releaseWaiting(): void {
    this.requests.releaseWaiting();
  }

  /** Next fetches begun by completions and failures, by lock token, for ThrottledWorker to take (takeHandover). */
  private readonly handovers = new Map<string, Promise<unknown[]>>();
  private readonly handoversExpected = new Set<string>();

  /** The completion or failure about to be reported for `token` returns at once; its next job is handed over after. */
  expectHandover(token: string): void {
    this.handoversExpected.add(token);
  }

  /** Ends what expectHandover began: true when a next fetch is there for takeHandover. */
  endHandover(token: string): boolean {
    this.handoversExpected.delete(token);
    return this.handovers.has(token);
  }

  private takeHandover(token: string): Promise<unknown[]> | undefined {
    const next = this.handovers.get(token);
    this.handovers.delete(token);
    return next;
  }

  private async takeNext(tokens: string[], name: string): Promise<TakeReply> {
    // Read in the same turn as the exact delivery reads it for the call's lease (ExactDelivery.take's context).
    const hMs = this.deadlines.currentMs();
    const sentAt = performance.now();
    const reply = await this.delivery!.take({ tokens, name, gen: this.lifecycle.config?.gen ?? '' });
    if (this.delivery!.mode === 'exact') {
      const repliedAt = performance.now();
      if (hMs > 0) this.deadlines.delivered(reply.jobs.map((job) => job.id), sentAt, hMs, reply.nowUs, reply.tickets, repliedAt);
      this.recovery.delivered(reply.tickets, repliedAt, hMs);
    } else if (reply.tickets) {
      this.deadlines.deliveredLeased(reply.jobs.map((job) => job.id), sentAt, reply.nowUs, reply.tickets);
    }
    if (reply.jobs.length > 0) this.recovery.learnIdentity(this.namespaceClient(), this.keys);
    return reply;
  }

  /** The processor is about to start on the job: its delivery when it came too late to start (then put back: latePutBacks). */
  lateStart(jobId: string | undefined): LateDelivery | undefined {
    const late = this.deadlines.lateStart(jobId);
    if (late) {
      this.recovery.putBack(late.ticket, late.repliedAt);
      this.latePutBacks.begin(late);
    }
    return late;
  }

  /** Jobs lateStart refused, through their put-back's steps (ThrottledWorker.handleFailed calls ready and moved). */
  readonly latePutBacks = new LatePutBacks({
    delivery: () => this.delivery,
    runner: () => this.runner,
    queue: () => ({ keys: this.queueKeys, marker: () => this.backend!.keys.marker }),
    logger: this.options.logger,
    queueName: this.options.queue,
  });

  /** Exact where the queue's keys and its throttles' share a slot, leased otherwise (src/delivery/createDelivery.ts). */
  private adoptDelivery(client: RedisClient): void {
    const chosen = createDelivery({
      queue: this.options.queue, prefix: this.options.prefix, workerId: this.workerId, keys: this.keys, queueKeys: this.queueKeys,
      logger: this.options.logger, scripts: this.options.scripts, leaseMs: this.options.leaseMs, durableRedis: this.options.durableRedis ?? false,
      grantor: this.options.grantor, client, runner: () => this.runner!, startDeadlineMs: () => this.deadlines.currentMs(),
      call: (leaseMs) => ({
        bullmqKeys: this.backend!.keys, queueKeys: this.queueKeys, throttlePrefix: this.keys.throttlePrefix,
        lockDuration: this.lockDuration, leaseMs, limiter: this.limiter, durableRedis: this.options.durableRedis ?? false,
        knownNodeId: this.recovery.knownNodeId,
      }),
      throttles: () => (this.lifecycle.config?.throttles ?? []).map((t) => encodeSegment(t.name)),
      concurrencyThrottles: () => (this.lifecycle.config?.throttles ?? []).filter((t) => t.maxInFlight !== undefined).map((t) => encodeSegment(t.name)),
      holdMs: () => this.lockDuration + this.stalledInterval,
      concurrency: this.options.concurrency,
      onTokens: () => this.tokensArrived(),
      report: (what, error) => this.failures.report(what, error),
      knownNodeId: () => this.recovery.knownNodeId,
      seenAlive: () => this.recovery.seenAlive(),
    });
    this.delivery = chosen.delivery;
    this.leaseMs = chosen.leaseMs;
    if (chosen.delivery.mode === 'exact') rateStartNotice(this.options.logger, this.options.queue, this.options.throttles, chosen.leaseMs);
    // Exact delivery keeps the guarantee at processor start when asked: h as given, or chosen by the worker ('auto').
    // Leased delivery's deadline is each job's tokens' expiry, h after the request that leased them (fixed).
    const own = this.options.leaseMs;
    this.deadlines = new StartDeadlines(chosen.delivery.mode === 'leased' ? chosen.leaseMs : own === 'auto' ? undefined : own, () => startDeadlineCeilingMs(this.lifecycle.config?.throttles ?? []), () => startDeadlineLateCeilingMs(this.lifecycle.config?.throttles ?? []));
    this.namespaceRunner = chosen.namespaceRunner;
    this.grantorConnection = chosen.grantorConnection;
  }

  /** The connection that reaches the namespace's slot (the grantor option's, or the worker's own). */
  private namespaceClient(): RedisClient {
    return this.grantorConnection?.client ?? this.workerClient!;
  }

  /** Leased tokens went into the queue's pools: slots waiting here look again, and bullmq's blocked main loop wakes. */
  private tokensArrived(): void {
    if (this.closed) return;
    this.requests.wakeParked();
    void this.wakeBullmq().catch(() => undefined);
  }

  private async wakeBullmq(): Promise<void> {
    if (this.closed || !this.backend) return;
    const client = (await this.backend.client) as unknown as RedisClient;
    await client.zadd(this.backend.keys.marker, 0, '0');
  }

  /** Takes a batch of newly added jobs and holds each in its class; resolves to how many were placed. */
  classifyBatch(): Promise<number> {
    return this.placer.classifyBatch();
  }

  /** Moves held jobs of classes from an older config generation back through classification. */
  reclaimInBackground(): void {
    if (!this.closed) this.placer.reclaimInBackground();
  }

  /**
   * First half of closing, before the worker itself closes: stop delivering and stop the heartbeat.
   * Resolves to a function that withdraws this worker's declarations afterwards, on a connection of its
   * own (the worker's are gone by then). Withdrawing only after the worker has closed matters: the new
   * generation's marker must wake the workers that remain, not this one's last blocking read.
   */
  async stop(): Promise<() => Promise<void>> {
    if (this.closed) return async () => undefined;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.requests.stop();
    await this.placer.settled();
    await this.refreshing;
    // Nothing to withdraw (the start failed, or never got that far): the grantor option's connection still closes.
    const closeGrantor = async () => { if (this.grantorConnection) await closeClient(this.grantorConnection); };
    if (!this.lifecycle.opened || !this.backend) return closeGrantor;
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

  /** Puts back held jobs of queues no live worker declares any more (see heldJobRelease). */
  private readonly heldRelease = new HeldJobRelease(this.options.prefix, this.options.logger);

  private async withdraw(spare: RedisClient): Promise<void> {
    try {
      this.runner = new ScriptRunner(spare, this.options.scripts);
      if (!this.grantorConnection) this.namespaceRunner = this.runner;
      const { lastOfQueue, lapsedQueues } = await this.lifecycle.withdraw(this.runner, this.namespaceRunner!);
      await this.delivery?.stop({ queue: this.runner, grantor: this.namespaceRunner! });
      // The last worker declaring throttles on the queue: its held jobs go back to bullmq's lists before close() resolves.
      await this.heldRelease.release(this.runner, [...(lastOfQueue ? [this.options.queue] : []), ...lapsedQueues]);
    } catch (error) {
      this.options.logger.warn({ queue: this.options.queue, err: error }, 'could not withdraw throttle declarations; they lapse on their own');
    } finally {
      await spare.quit().catch(() => spare.disconnect());
      if (this.grantorConnection) await closeClient(this.grantorConnection);
    }
  }
}
