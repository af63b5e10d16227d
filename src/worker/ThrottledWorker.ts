import { Job, Processor, UnrecoverableError, Worker, WorkerOptions } from 'bullmq';
import pino, { Logger } from 'pino';
import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { RetryAfterError } from '../errors/RetryAfterError';
import { SlowDownError } from '../errors/SlowDownError';
import { checkFairness, FairnessOptions, FairnessSpec } from '../declarations/Fairness';
import { ThrottleWaitTimeoutError } from '../errors/ThrottleWaitTimeoutError';
import { CompletionInDoubtError } from '../errors/CompletionInDoubtError';
import { LateStartError } from '../errors/LateStartError';
import { StartDeadlineStats } from './lateStarts/startDeadlines';
import { timedProcessor } from './lateStarts/timedProcessor';
import { mergeDeclarations } from '../declarations/mergeDeclarations';
import { Throttle } from '../declarations/Throttle';
import { LuaScript } from '../lua/scripts';
import { BullmqAdapter } from '../bullmq/BullmqAdapter';
import { selectAdapter } from '../bullmq/selectAdapter';
import { quietAfterClose } from '../bullmq/quietAfterClose';
import { noDrainedOnPasses } from './slots/noDrainedOnPasses';
import { AttributesFunction } from '../queueState/jobClassifier';
import { ThrottleGate } from './ThrottleGate';
import { DEFAULT_PREFIX } from '../options/defaults';
import { ThrottleEventListeners, ThrottleEventName } from './notices/throttleEvents';
import type { ConnectionInput } from '../redis/connection';

/**
 * The options of a ThrottledWorker: every bullmq WorkerOptions (connection, concurrency, prefix, ...), which
 * work as in a plain Worker, and the throttles with what they need.
 * @example
 * ```ts
 * const worker = new ThrottledWorker('payments', processor, {
 *   connection,
 *   concurrency: 20,
 *   throttles: [Throttle.named('stripe').limit(100, '1s')],
 * });
 * ```
 */
export interface ThrottledWorkerOptions extends WorkerOptions {
  /**
   * The throttles this worker's processor is held to; they apply to every job of the queue, whoever takes it.
   * Required; `[]` declares none.
   */
  throttles: readonly Throttle[];
  /**
   * Computes attributes (for Key.attribute keys) once per job, when the throttle layer first sees it; they are
   * stored with the job. A function that throws holds the job as missing every attribute key.
   * @default none: every Key.attribute key counts as missing
   * @example
   * ```ts
   * attributes: (job) => ({ tier: job.data.plan === 'pro' ? 'pro' : 'free' }),
   * ```
   */
  attributes?: AttributesFunction;
  /**
   * Fair shares between groups of the queue's jobs (tenants): whenever jobs of several groups could go, they take
   * turns in proportion to their weights (counted in job costs), whatever order they were added in; a group with
   * nothing that fits gives its turn away. Every worker of the queue must declare the same key (or
   * ThrottleConflictError at start). Held jobs take their turns as they are first held.
   * @default none: held jobs go in queue order (priority, then first in, first out)
   * @example
   * ```ts
   * fairness: { key: Key.data('tenant'), weights: { bigco: 3 } },
   * ```
   */
  fairness?: FairnessOptions;
  /**
   * A pino logger for what the throttle layer does (declarations registered, pauses, holds, Redis errors).
   * @default a silent pino logger
   */
  logger?: Logger;
  /**
   * How long a crashed worker's declarations outlive it (ms). Refreshed every third of it, the worker's
   * heartbeat (5 s by default).
   * @default 15000
   */
  declarationTtlMs?: number;
  /**
   * h. In exact delivery (the queue's keys and its throttles' in one slot or server), more than 0 counts each
   * delivery against windows of W + h, and a job a window counted starts within h of the call that delivered it
   * or not at all (it is put back held, no attempt made, its window tokens given back): so at most N processors
   * start in any window W, where the API sees it. (A bucket whose every window is at most a quarter full with the
   * delivery counts it with the longer of h and a quarter of its shortest window, at most 250 ms, and the job may start
   * within that.) 'auto' (the default): the worker chooses h from how long its processors take to start (see
   * the default below). 0 counts deliveries at bullmq's processedOn only (the moment the delivery script ran): a
   * processor may then start later, and two windows' deliveries can start in one window of the API's. In leased
   * delivery (throttles counted in another slot, or on the `grantor`'s Redis), a leased token may be spent up
   * to h after the request that asked for it (measured on the queue's Redis clock) and counts against W + h
   * ('auto' is 100 there; 0 is refused). Either way the sustained ceiling is N / (W + h).
   * @default `'auto'`. In exact delivery the worker then chooses h at each delivery call: 50 ms until 100
   * processors of jobs a window (or a rate with a lease) counted have checked their start; then, chosen again
   * after every 100 such starts, 1.5 times the p99 of the latest 1,000 start delays (from sending the delivery
   * call to the check right before the processor), rounded up to a whole ms and at least 10 ms; and never more
   * than the cap: 100 ms, or a thirtieth of the shortest `limit` window the queue's live workers declare
   * (rounded down) when that is less, but at least 20 ms. In leased delivery, `'auto'` is 100 ms.
   */
  leaseMs?: number | 'auto';
  /**
   * Keep the throttles on another Redis (server, Sentinel set or Cluster): queues on separate Redis servers
   * that give the same grantor share their throttles. Deliveries are then leased (see leaseMs).
   * @default the worker's own connection
   */
  grantor?: {
    /**
     * The Redis that counts the throttles: ioredis options, a redis:// URL, a Cluster's seeds
     * (`{ startupNodes }`), or an ioredis client (which the worker never closes).
     */
    connection: ConnectionInput;
  };
  /**
   * The Redis holding the throttles never loses a write it acknowledged (AOF with appendfsync always, and no
   * failover to a replica that lags). When that Redis restarts or a replica takes over, the throttles it
   * counts then resume after leaseMs (and a 100 ms margin) rather than after their longest window, which
   * is how long they otherwise pause, since deliveries counted just before may have been lost with it.
   * @default false
   */
  durableRedis?: boolean;
  /**
   * The throttle namespace: throttles of one name are one throttle within it, whatever queue or bullmq
   * prefix declares them. Give queues of different prefixes the same throttlePrefix to share their throttles.
   * @default prefix (bullmq's, 'bull' unless set)
   */
  throttlePrefix?: string;
}

/** Internal: tests swap in scripts built with a steerable clock. */
export const THROTTLE_SCRIPTS = Symbol('bullmq-throttle scripts');

function checkedThrottles(queue: string, throttles: unknown): readonly Throttle[] {
  if (!Array.isArray(throttles)) {
    throw new InvalidThrottleError(`ThrottledWorker('${queue}'): throttles must be an array of Throttle declarations, such as [Throttle.named('stripe').limit(100, '1s')].`);
  }
  for (const throttle of throttles) {
    if (!(throttle instanceof Throttle)) {
      throw new InvalidThrottleError(`ThrottledWorker('${queue}'): ${JSON.stringify(throttle)} is not a Throttle; build it with Throttle.named(name).limit(n, window).`);
    }
    throttle.assertUsable();
  }
  const names = new Set(throttles.map((t: Throttle) => t.name));
  for (const name of names) mergeDeclarations(throttles.filter((t: Throttle) => t.name === name));
  return throttles;
}

/** The throttles with the worker's fairness key in place of Key.fairness(); InvalidOptionError without one. */
function withFairnessKey(queue: string, throttles: readonly Throttle[], fairness: FairnessSpec | undefined): readonly Throttle[] {
  const keyed = throttles.filter((t) => t.keyParts?.some((part) => part.kind === 'fairness'));
  if (keyed.length === 0) return throttles;
  if (!fairness) {
    throw new InvalidOptionError(`ThrottledWorker('${queue}'): throttle '${keyed[0].name}' is keyed by Key.fairness(), the queue's fairness key: give the worker a fairness option, such as fairness: { key: Key.data('tenant') }.`);
  }
  return throttles.map((t) => t.withFairnessKey(fairness.key));
}

/**
 * A bullmq Worker whose jobs are delivered only within the declared throttles: a job that cannot go yet
 * stays held in Redis (no lock, no attempt, no `active` event) while jobs of other buckets keep flowing.
 * Every WorkerOptions works as in Worker; producers keep using Queue.add unchanged.
 */
export class ThrottledWorker<DataType = any, ResultType = any, NameType extends string = string> extends Worker<DataType, ResultType, NameType> {
  private readonly gate: ThrottleGate;
  private readonly autorun: boolean;
  /** The processor is a function, wrapped so that its start deadline is checked right before it runs. */
  private readonly checksItsOwnStart: boolean;
  private readonly adapter: BullmqAdapter;

  constructor(name: string, processor: string | URL | null | Processor<DataType, ResultType, NameType> | undefined, opts: ThrottledWorkerOptions) {
    // The installed bullmq's line (UnsupportedBullmqError, naming the supported range, outside them).
    const adapter = selectAdapter();
    const fairness = opts.fairness ? checkFairness(name, opts.fairness) : undefined;
    const throttles = withFairnessKey(name, checkedThrottles(name, opts?.throttles), fairness);
    if (opts.leaseMs !== undefined && opts.leaseMs !== 'auto' && (!Number.isSafeInteger(opts.leaseMs) || opts.leaseMs < 0)) {
      throw new InvalidOptionError(`ThrottledWorker('${name}'): leaseMs ${String(opts.leaseMs)} must be a whole number of milliseconds, 0 or more, or 'auto' (or left out).`);
    }
    let worker: ThrottledWorker<DataType, ResultType, NameType> | undefined;
    const gate = new ThrottleGate({
      queue: name,
      prefix: opts.prefix ?? DEFAULT_PREFIX,
      namespace: opts.throttlePrefix ?? opts.prefix ?? DEFAULT_PREFIX,
      throttles,
      attributes: opts.attributes,
      ...(fairness ? { fairness } : {}),
      logger: opts.logger ?? pino({ level: 'silent' }),
      declarationTtlMs: opts.declarationTtlMs ?? 15_000,
      leaseMs: opts.leaseMs,
      grantor: opts.grantor,
      durableRedis: opts.durableRedis,
      concurrency: () => worker?.concurrency ?? opts.concurrency ?? 1,
      mayWait: () => !worker?.isPaused(),
      scripts: (opts as { [THROTTLE_SCRIPTS]?: Map<string, LuaScript> })[THROTTLE_SCRIPTS],
      onError: (error) => worker?.emit('error', error),
      // bullmq types emit() by its own events: these are the worker's too (the declaration merged below).
      emit: (event, payload) => { (worker as unknown as { emit(event: string, payload: unknown): boolean } | undefined)?.emit(event, payload); },
      // bullmq's main loop takes each lock token as `${worker.id}:${n}`.
      mainLoopToken: (token) => worker !== undefined && token.startsWith(`${worker.id}:`),
      emitDrained: () => worker?.emit('drained'),
    });
    const { throttles: _t, attributes: _a, fairness: _f, logger: _l, declarationTtlMs: _d, leaseMs: _h, throttlePrefix: _n, grantor: _g, durableRedis: _r, ...workerOptions } = opts;
    // A processor function checks its start deadline itself, as the last thing before it is called (timedProcessor).
    const timed = typeof processor === 'function'
      ? timedProcessor(gate, processor as unknown as (job: Job, ...rest: unknown[]) => Promise<ResultType>) as unknown as Processor<DataType, ResultType, NameType>
      : processor;
    super(name, timed as Processor<DataType, ResultType, NameType>, { ...workerOptions, autorun: false }, adapter.workerConstructorArg(gate) as undefined);
    adapter.afterConstruct(this, gate);
    quietAfterClose(this);
    noDrainedOnPasses(this, () => gate.passing);
    this.gate = gate;
    this.adapter = adapter;
    worker = this;
    // Failures surface through gate.ready: run() and waitUntilReady() reject with them.
    gate.start().catch(() => undefined);
    this.autorun = opts.autorun !== false && Boolean(processor);
    this.checksItsOwnStart = typeof processor === 'function';
    if (this.autorun) {
      // A failed start was emitted once already, by the gate.
      this.run().catch((error: Error) => { if (error !== gate.startFailure) this.emit('error', error); });
    }
  }

  /**
   * Resolves once the worker's connection is ready and its throttle declarations are registered, with what
   * bullmq's own resolves with (its client on bullmq 5, nothing on bullmq 6): the return type is bullmq's, so that
   * these declarations compile against whichever line the app installs.
   */
  override async waitUntilReady(): ReturnType<Worker['waitUntilReady']> {
    // Both, but a failed start rejects at once: the connection may never become ready (a wrong password).
    const [ready] = await Promise.all([super.waitUntilReady(), this.gate.ready]);
    // bullmq's run (lock manager, stalled checks, main loop) starts once the gate is ready, a few promise
    // turns after it: let it, so that a worker that autoruns is running when this resolves, as a plain one is.
    if (this.autorun) await new Promise((resolve) => setImmediate(resolve));
    return ready;
  }

  /**
   * As Worker's run: starts processing jobs, once the worker's connection is ready and its throttle declarations
   * are registered. Call it when `autorun` is false; it resolves when the worker stops running (after close).
   * A failed start rejects, and is emitted once as `error` too.
   * @throws {@link RedisSetupError} when Redis refuses what the worker needs in a way that waiting does not change
   *   (ACL, credentials, Cluster layout, a missing command).
   * @throws {@link ThrottleConflictError} when a live worker of the namespace declares a throttle of the same name
   *   with another key or cost.
   * @throws {@link InvalidOptionError} when `leaseMs` is 0 but deliveries must be leased (a `grantor`, or throttles
   *   counted in another Redis Cluster slot).
   * @throws Error when the worker was closed before it started; as bullmq's, when it is already running or has
   *   no processor.
   */
  override async run(): Promise<void> {
    await this.gate.ready;
    return super.run();
  }

  /**
   * As Worker's, at the moment the processor starts: a job delivered more than h before is not started but
   * put back held (handleFailed), what it was counted in given back, so that no processor starts later than its
   * delivery was counted for.
   */
  protected override callProcessJob(job: Job<DataType, ResultType, NameType>, token: string, signal?: AbortSignal): Promise<ResultType> {
    // Held past its throttle's maxWait: delivered to be failed, never run (no retry: an UnrecoverableError).
    const timedOut = this.gate.waitTimeouts.take(job.id, token);
    if (timedOut !== undefined) return Promise.reject(new ThrottleWaitTimeoutError(job.id, timedOut));
    // A cost that cannot be counted: it was delivered counting 0 there, and fails without running, whatever
    // attempts are left (an UnrecoverableError), a processor function or a sandboxed one alike.
    const costFailure = this.gate.jobs?.costFailure(job as Job);
    if (costFailure) return Promise.reject(new UnrecoverableError(costFailure));
    // A processor function checks its deadline itself, right before it runs (the wrapper in the constructor).
    if (!this.checksItsOwnStart) {
      const late = this.gate.starts?.lateStart(job.id);
      if (late) return Promise.reject(new LateStartError(job.id, late.deadlineMs));
    }
    return super.callProcessJob(job, token, signal);
  }

  /** h as the worker holds it now, and how many processors started and jobs went back held for starting late. */
  get startDeadline(): StartDeadlineStats {
    return this.gate.deadlines.stats();
  }

  /**
   * As Worker's, except that the `completed` event fires as soon as the job is completed: the slot's next
   * job, fetched at the same time, may wait in this process for room to return, and is taken after.
   * Every argument after the token goes on as given (the list differs between bullmq lines).
   */
  protected override async handleCompleted(result: ResultType, job: Job<DataType, ResultType, NameType>, token: string, ...rest: unknown[]): Promise<Job<DataType, ResultType, NameType>> {
    this.gate.expectHandover(token);
    let next: Job<DataType, ResultType, NameType> | undefined;
    try {
      next = await (super.handleCompleted as (...args: unknown[]) => Promise<Job<DataType, ResultType, NameType>>).call(this, result, job, token, ...rest);
    } finally {
      // Whatever became of the completion: a job still active keeps its count (releaseInFlight checks).
      void this.gate.jobs?.jobEnded(job.id);
    }
    return next ?? this.nextHandedOver(token);
  }

  /**
   * As handleCompleted, for the `failed` event. bullmq hands a completion's error here too (processJob's catch
   * takes whatever handleCompleted threw): a completion left in doubt by closing during a failover
   * (CompletionInDoubtError) must not fail a job whose processor succeeded, so it is left to the stalled-job check.
   */
  protected override async handleFailed(err: Error, job: Job<DataType, ResultType, NameType>, token: string, ...rest: unknown[]): Promise<Job<DataType, ResultType, NameType>> {
    if (err instanceof CompletionInDoubtError) return undefined as unknown as Job<DataType, ResultType, NameType>;
    let released = false;
    if (err instanceof LateStartError) {
      // Its concurrency goes while the job is still locked: back in wait it may be delivered again at once, and a
      // release after that would take the new delivery's count. It is marked to go first there too.
      await Promise.all([this.gate.jobs?.jobEnded(job.id), this.gate.latePutBacks?.ready(job.id)]);
      released = true;
      // bullmq's own path for a job its processor rate-limited: back to wait (held there again), no attempt made.
      err = (Worker as unknown as { RateLimitError(): Error }).RateLimitError();
    }
    if (RetryAfterError.is(err)) {
      // Its buckets pause first, so that the job, back in wait, is held there rather than delivered again; it is
      // marked to go first there once they resume.
      await Promise.all([
        this.gate.jobs?.retryAfter(job as Job, err).catch((error: Error) => this.emit('error', error)),
        this.gate.latePutBacks?.markRetryAfter(job.id),
      ]);
      // bullmq's own path for a job its processor rate-limited: back to wait, no attempt counted.
      err = (Worker as unknown as { RateLimitError(): Error }).RateLimitError();
    } else if (SlowDownError.is(err)) {
      // Its adaptive limits go down first, so that the job, back in wait, goes at the lowered limit.
      await Promise.all([
        this.gate.jobs?.slowDown(job as Job, err).catch((error: Error) => this.emit('error', error)),
        this.gate.latePutBacks?.markRetryAfter(job.id),
      ]);
      err = (Worker as unknown as { RateLimitError(): Error }).RateLimitError();
    }
    this.gate.expectHandover(token);
    let next: Job<DataType, ResultType, NameType> | undefined;
    try {
      next = await (super.handleFailed as (...args: unknown[]) => Promise<Job<DataType, ResultType, NameType>>).call(this, err, job, token, ...rest);
    } finally {
      if (!released) void this.gate.jobs?.jobEnded(job.id);
      // Back in wait, first: the rest of its put-back.
      else this.gate.latePutBacks?.moved(job.id);
    }
    return next ?? this.nextHandedOver(token);
  }

  private async nextHandedOver(token: string): Promise<Job<DataType, ResultType, NameType>> {
    if (!this.gate.endHandover(token)) return undefined as unknown as Job<DataType, ResultType, NameType>;
    try {
      // Worker.moveToActive asks the gate (ThrottleGate.deliver), which hands over the fetch begun with the completion.
      return (await this.adapter.moveToActive(this, token)) as Job<DataType, ResultType, NameType>;
    } catch (error) {
      // The job is completed or failed already: a failed fetch must not send bullmq to finish it again.
      // The slot is free, and bullmq's main loop fetches for it (as after any fetch it could not make).
      this.emit('error', error as Error);
      return undefined as unknown as Job<DataType, ResultType, NameType>;
    }
  }

  /**
   * As Worker's. A blocking call blocks as bullmq's does (until a job can go, or for drainDelay): a wake-up
   * that finds no job (the throttle layer wakes blocked workers when its config changes or a bucket has
   * room again, through the queue's marker) does not end it early.
   *
   * @example
   * const job = await worker.getNextJob(token, { block: false }); // look once, without waiting
   * @param token - The lock token the job is taken with, as bullmq's.
   * @param options - Whether to wait for a job (`block`).
   * @returns The job taken, or undefined when none could go.
   */
  override async getNextJob(token: string, { block = true }: {
    /**
     * Wait for a job (until one can go, or for drainDelay) when none can go now; false: look once. As in
     * bullmq, a call blocks only once the worker has drained, and not while rate limited, paused or closing.
     * @default true
     */
    block?: boolean;
  } = {}): Promise<Job<DataType, ResultType, NameType>> {
    // bullmq blocks only once the worker has drained (its first call looks without blocking), and not while
    // rate limited or while another blocking read is under way: a call that would not block is bullmq's alone.
    const state = this as unknown as { drained: boolean; limitUntil: number; waiting: unknown };
    const blocks = () => block && state.drained && !(state.limitUntil > Date.now()) && !state.waiting && !this.closing && !this.isPaused();
    if (!blocks()) return super.getNextJob(token, { block });
    const until = Date.now() + this.opts.drainDelay! * 1000;
    for (;;) {
      const job = await super.getNextJob(token, { block });
      if (job || !blocks() || Date.now() >= until) return job;
    }
  }

  /** As Worker's; slots waiting for room give up their wait first, so that pausing does not wait for room. */
  override async pause(doNotWaitActive?: boolean): Promise<void> {
    const pausing = super.pause(doNotWaitActive);
    this.gate.releaseWaiting();
    return pausing;
  }

  /**
   * As Worker's, and bullmq's main loop looks for a job at once. Why: a main loop that was waiting when the
   * worker paused comes back waiting on the queue's marker (bullmq's wait ended with "look again never"), and a
   * marker tells it only of jobs in bullmq's own lists: jobs held here for room would then wait for bullmq's
   * longest block (10 s) unless the marker the gate set for their room was still there.
   */
  override resume(): ReturnType<Worker['resume']> {
    // void on bullmq 5, a promise on bullmq 6: the marker, once set, waits for the loop either way.
    const resumed = super.resume();
    this.gate.wakeMainLoop();
    return resumed;
  }

  /** Stops taking jobs, closes as Worker does, then withdraws this worker's declarations (so a limit it alone held lifts at once). */
  override async close(force = false): Promise<void> {
    const withdraw = await this.gate.stop();
    await super.close(force);
    await withdraw();
  }

  /** The throttles in effect on this queue, after combining every live worker's declarations. */
  get effectiveThrottles() {
    return this.gate.currentConfig?.throttles ?? [];
  }
}

/** The throttle events (src/worker/notices/throttleEvents.ts), beside bullmq's: `worker.on('throttle:held', (e) => ...)`. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface ThrottledWorker<DataType = any, ResultType = any, NameType extends string = string> {
  // bullmq's own overloads, and these: an intersection of call signatures is an overload set.
  /**
   * As Worker's `on`, and for the throttle events too (see {@link ThrottleEventListeners}): `'throttle:held'`,
   * `'throttle:paused'` and `'throttle:recovery'`. Returns the worker.
   * @example
   * ```ts
   * worker.on('throttle:held', ({ throttle, waiting }) => console.log(`${waiting} jobs wait on ${throttle}`));
   * ```
   */
  on: Worker<DataType, ResultType, NameType>['on'] & ThrottleListen<this>;
  /** As Worker's `once`, and for the throttle events too (see {@link ThrottleEventListeners}). Returns the worker. */
  once: Worker<DataType, ResultType, NameType>['once'] & ThrottleListen<this>;
  /** As Worker's `off`, and for the throttle events too (see {@link ThrottleEventListeners}). Returns the worker. */
  off: Worker<DataType, ResultType, NameType>['off'] & ThrottleListen<this>;
}

/** `on`, `once` and `off` for the throttle events (ThrottleEventListeners), returning the worker. */
export type ThrottleListen<W> = <E extends ThrottleEventName>(event: E, listener: ThrottleEventListeners[E]) => W;
