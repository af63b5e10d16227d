import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ThrottleKeys, QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';
import { QueueConfig } from '../queueState/queueConfig';
import { JobCompleter } from './completion/jobCompleter';
import { DeliveryRequest } from './slots/deliveryTuning';
import { FinishArgs, Finished, Gate, GatedQueue } from '../bullmq/BullmqAdapter';
import { GateFailures } from './gateFailures';
import { clientOrRefusal } from './clientOrRefusal';
import { assertNamespaceUsable } from '../keys/hashSlotTag';
import { NamespaceRecovery } from './recovery/namespaceRecovery';
import { StartDeadlines } from './lateStarts/startDeadlines';
import { LatePutBacks } from './lateStarts/latePutBacks';
import { SlotRequests } from './slots/slotRequests';
import { ProcessedJobs } from './completion/processedJobs';
import { DispatchDelay } from './completion/dispatchDelay';
import { WaitTimeouts } from './completion/waitTimeouts';
import { AttachedQueue, GateOptions } from './gateOptions';
import { ConnectedGate } from './connectedGate';
import type { ProcessorStarts } from './lateStarts/processorStarts';

export type { GateOptions } from './gateOptions';

/** Each delivery's h before the gate connects: none, so no delivery is late. */
const NO_DEADLINES = new StartDeadlines(0);

/**
 * Gates every path by which bullmq hands a job to a worker on the throttles: the line's adapter
 * (src/bullmq/) puts a throttled delivery in place of bullmq's moveToActive and turns fetch-next off in
 * completions, failures and retries, fetching through the same gate instead (the calls of `Gate`). It
 * also keeps this worker's declarations registered.
 *
 * Built before the worker's connection exists; start() connects it (ConnectedGate, src/worker/connectedGate.ts),
 * which holds the runners, the delivery and what works through them. Slot requests made before then wait for it.
 */
export class ThrottleGate implements Gate {
  readonly workerId = randomUUID();
  /** What this worker remembers for when the namespace's node loses its counts (src/worker/recovery/namespaceRecovery.ts). */
  private readonly recovery: NamespaceRecovery;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  private resolveStart: (connected: ConnectedGate) => void = () => undefined;
  private rejectStart: (error: Error) => void = () => undefined;
  /** Resolves to the connected gate once its declarations are registered; rejects with what the start failed with. */
  private readonly started = new Promise<ConnectedGate>((resolve, reject) => {
    this.resolveStart = resolve;
    this.rejectStart = reject;
  });
  readonly ready: Promise<void> = this.started.then(() => undefined);
  private attached?: AttachedQueue;
  /** Completes jobs before the gate connects: each alone, through bullmq (the connected gate's completer batches them). */
  private completerBeforeConnection?: JobCompleter;
  private connected?: ConnectedGate;
  private closed = false;
  private readonly failures: GateFailures;
  private failedStart?: Error;
  /** Processors' start delays and run times: noted by ThrottledWorker, published by the connected gate's heartbeat. */
  readonly dispatchDelay = new DispatchDelay();
  /** Jobs delivered to be failed for waiting past their throttle's maxWait: noted from each reply, taken by ThrottledWorker. */
  readonly waitTimeouts = new WaitTimeouts();
  private readonly requests: SlotRequests;

  constructor(private readonly options: GateOptions) {
    this.keys = new ThrottleKeys(options.prefix, options.namespace);
    assertNamespaceUsable(`ThrottledWorker('${options.queue}')`, 'throttlePrefix (by default the prefix)', options.namespace, this.keys.namespaceBase);
    this.queueKeys = this.keys.queue(options.queue);
    this.recovery = new NamespaceRecovery(this.workerId, options.throttles, options.logger, options.queue);
    // A start-up failure is reported through run()/waitUntilReady(); never as an unhandled rejection.
    this.ready.catch(() => undefined);
    this.started.catch(() => undefined);
    this.failures = new GateFailures(options, () => this.attachedClient(), () => this.closed);
    this.requests = new SlotRequests({
      started: this.started,
      failures: this.failures,
      closed: () => this.closed,
      mayWait: options.mayWait,
      concurrency: options.concurrency,
      maxBatch: () => this.deadlines.batchLimit(),
      wakeBullmq: async () => { await this.connected?.wakeBullmq(); },
      emitDrained: () => options.emitDrained?.(),
      roomReturnsOnlyWithTime: () => this.connected?.roomReturnsOnlyWithTime() ?? false,
    });
  }

  /** The error the start failed with (already emitted as `error` once), if it failed. */
  get startFailure(): Error | undefined {
    return this.failedStart;
  }

  get currentConfig(): QueueConfig | undefined {
    return this.connected?.lifecycle.config;
  }

  /** Each delivery's h, and whether its processor may still start (exact delivery; see startDeadlines.ts). */
  get deadlines(): StartDeadlines {
    return this.connected?.deadlines ?? NO_DEADLINES;
  }

  /** What becomes of the jobs this worker runs (none before the gate connects: no job comes through it before). */
  get jobs(): ProcessedJobs | undefined {
    return this.connected?.jobs;
  }

  /** Jobs lateStart refused, through their put-back's steps (ThrottledWorker.handleFailed calls ready and moved). */
  get latePutBacks(): LatePutBacks | undefined {
    return this.connected?.latePutBacks;
  }

  /**
   * Takes bullmq's side of the worker (src/bullmq/: bullmq 6's backend, or what bullmq 5's adapter builds from
   * its Worker). The adapter maps the line's hooks onto deliver, finishThenFetch, complete/completeFromArgs
   * and fetchAfterMove, so that every delivery goes through the throttles.
   */
  attach(queue: GatedQueue, workerOptions: { name?: string; lockDuration?: number; stalledInterval?: number; limiter?: { max: number; duration: number } }): void {
    this.attached = {
      backend: queue,
      workerName: workerOptions.name ?? '',
      lockDuration: workerOptions.lockDuration ?? 30_000,
      stalledInterval: workerOptions.stalledInterval ?? 30_000,
      limiter: workerOptions.limiter,
    };
    this.completerBeforeConnection = new JobCompleter({
      queue: this.options.queue,
      backend: queue,
      refusedTokensKey: this.queueKeys.refusedTokens,
      completeAlone: (jobId, args) => queue.moveToFinished(jobId, args),
      closing: () => this.closed || Boolean(queue.closing),
      lockDuration: this.attached.lockDuration,
      report: (task, error) => this.failures.report(task, error),
      recovered: (task) => this.failures.recovered(task),
    });
  }

  private completer(): JobCompleter {
    const completer = this.connected?.completer ?? this.completerBeforeConnection;
    if (!completer) throw new Error('ThrottleGate: a completion before attach()');
    return completer;
  }

  /** The worker's connection for describing a failed start's error (none before attach). */
  private async attachedClient(): Promise<RedisClient | undefined> {
    return this.attached && ((await this.attached.backend.client) as unknown as RedisClient);
  }

  /** bullmq's main loop asks for a job (or getNextJob, or a slot after a delayed job): a moveToActive reply. */
  deliver(token: string, name?: string): Promise<unknown[]> {
    const mainLoop = this.options.mainLoopToken?.(token) ?? false;
    return this.takeHandover(token) ?? this.requests.submit({ token, name: name ?? this.attached?.workerName ?? '', kind: 'fetch', waits: 0, mainLoop });
  }

  /** The main loop's last fetch was answered with a pass (SlotRequests.submit): bullmq's `drained` on it is not one. */
  get passing(): boolean {
    return this.requests.passing;
  }

  private fetchesNext(fetchNext: boolean): boolean {
    return fetchNext && !this.attached?.backend.closing && !this.closed;
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
    const next = this.moveToActive(token, this.attached?.workerName ?? '', 'next');
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
    return this.completer().complete(job, returnValue, removeOnComplete, token);
  }

  /** Completes a job in a batch from moveToFinished's arguments (fetch-next off): as bullmq's moveToFinished answers. */
  completeFromArgs(jobId: string, args: FinishArgs): Promise<unknown[]> {
    return this.completer().completeFromArgs(jobId, args);
  }

  /**
   * After a move to delayed made with fetch-next off: the slot's next job through the gate when fetchNext.
   * As bullmq's moveToDelayed, the answer is a job or nothing (`result`, the move's own answer), never a
   * rate-limit delay or a time to look again.
   */
  async fetchAfterMove(result: unknown, token: string | undefined, fetchNext: boolean): Promise<unknown> {
    if (!this.fetchesNext(fetchNext) || !token) return result;
    const next = await this.moveToActive(token, this.attached?.workerName ?? '', 'fetch');
    return next[0] ? next : result;
  }

  /** Registers this worker's declarations (retrying while Redis is unreachable) and starts the heartbeat. */
  async start(): Promise<void> {
    const attached = this.attached;
    if (!attached) throw new Error('ThrottleGate.start() before attach()');
    let backoffMs = 100;
    let connected: ConnectedGate | undefined;
    for (;;) {
      if (this.closed) return this.rejectStart(new Error(`ThrottledWorker for '${this.options.queue}' closed before it started`));
      try {
        const client = await clientOrRefusal(attached.backend);
        connected ??= this.connect(attached, client);
        await connected.register();
        break;
      } catch (error) {
        const failure = await this.failures.atStart(error);
        if (failure) {
          // close() finds the gate closed and does nothing more: the grantor option's connection closes here.
          await connected?.abandon();
          this.closed = true;
          this.failedStart = failure;
          return this.rejectStart(failure);
        }
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
    connected.heartbeat.start();
    this.resolveStart(connected);
  }

  private connect(attached: AttachedQueue, client: RedisClient): ConnectedGate {
    const { options, workerId, keys, queueKeys, recovery, failures, requests, dispatchDelay, waitTimeouts } = this;
    this.connected = new ConnectedGate({ options, workerId, keys, queueKeys, recovery, failures, requests, dispatchDelay, waitTimeouts, attached, closed: () => this.closed }, client);
    return this.connected;
  }

  /**
   * One delivery attempt for one of the worker's slots. Requests that arrive while a delivery call is in
   * flight are served together by the next call, each with its own lock token, so a busy worker pays the
   * script's fixed cost once per batch and no job is ever fetched ahead of a slot that asked for it.
   */
  moveToActive(token: string, name: string, kind: DeliveryRequest['kind']): Promise<unknown[]> {
    return this.requests.submit({ token, name, kind, waits: 0 });
  }

  /** bullmq's main loop, if it waits on the queue's marker, looks again now (the worker resumes). */
  wakeMainLoop(): void {
    void this.connected?.wakeBullmq().catch(() => undefined);
  }

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

  /**
   * Where each processor's start is checked: in ThrottledWorker's wrapper pendingStart, then the clock, then the
   * processor at once or refuseStart, and started once the processor returned; lateStart for a sandboxed one.
   * Undefined before the gate connects (nothing was delivered through it then).
   */
  get starts(): ProcessorStarts | undefined {
    return this.connected?.starts;
  }

  /** Takes a batch of newly added jobs and holds each in its class; resolves to how many were placed. */
  async classifyBatch(): Promise<number> {
    return (await this.started).classifyBatch();
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
    this.connected?.heartbeat.stop();
    this.requests.stop();
    if (this.connected) return this.connected.stop();
    // Not connected yet: should the start still connect, the grantor option's connection it opens closes after the worker.
    return async () => { await this.connected?.closeGrantor(); };
  }
}
