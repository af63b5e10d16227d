import type { Logger } from 'pino';
import { RedisSetupError } from '../errors/RedisSetupError';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { ThrottleConflictError } from '../errors/ThrottleConflictError';
import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { RedisClient } from '../redis/connection';
import { describeRedisError } from '../redis/describeRedisError';
import { redisErrorKind } from '../redis/redisErrorKind';

/**
 * At most one `error` event per second for errors that keep coming: a worker whose Redis is out of memory
 * or failing over would otherwise emit one per delivery attempt (thousands a second), drowning the one
 * line that says what is wrong. The first error after a quiet second is always emitted.
 */
const EMIT_INTERVAL_MS = 1_000;
/** A task that keeps failing logs its first error, then one line per this long saying how many followed. */
const LOG_INTERVAL_MS = 30_000;
/**
 * A delivery call that fails waits before it tries again, from the first wait doubling up to the most, so
 * that a worker whose Redis refuses every call at once (OOM, LOADING) does not spin. The most is short, so
 * that deliveries resume within a second of Redis healing: a Cluster failover takes a few seconds, and plain
 * bullmq's main loop asks again as soon as a fetch fails (the gate counts the wait from when the failed call
 * went out, so a call that took ioredis's redirections to fail is retried at once).
 */
const DELIVERY_RETRY_FIRST_MS = 100;
const DELIVERY_RETRY_MOST_MS = 1_000;
/** How long describing an error waits for a client to probe keys with (one that never connects: none). */
const CLIENT_WAIT_MS = 1_000;

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref());
}

export interface GateFailureOptions {
  queue: string;
  prefix: string;
  namespace: string;
  logger: Logger;
  /** Emits `error` on the worker. */
  onError?: (error: Error) => void;
}

interface TaskLog {
  loggedAt: number;
  unlogged: number;
}

/**
 * What the throttle gate does with a Redis error: one that waiting cannot heal (redisErrorKind) fails the
 * start at once with a message naming the key or command and the fix; any other is retried with backoff,
 * logged sparingly and emitted as `error` at most once a second.
 */
export class GateFailures {
  private lastEmitAt = -Infinity;
  private readonly failing = new Map<string, TaskLog>();
  private deliveryRetryMs = 0;

  constructor(
    private readonly options: GateFailureOptions,
    private readonly client: () => Promise<RedisClient | undefined>,
    /** True once the worker closes: errors of calls cut short by closing are not reported (as bullmq does). */
    private readonly closing: () => boolean = () => false,
  ) {}

  private get who(): string {
    return `ThrottledWorker('${this.options.queue}')`;
  }

  /**
   * An error while the worker starts. Resolves to the error the start fails with when waiting cannot heal
   * it (already logged and emitted once); otherwise reports it and resolves to undefined (try again).
   */
  async atStart(error: unknown): Promise<Error | undefined> {
    if (error instanceof ThrottleConflictError || error instanceof InvalidOptionError || error instanceof InvalidThrottleError) {
      this.options.logger.error({ queue: this.options.queue, err: error }, `the worker does not start: ${error.message}`);
      this.emit(error, true);
      return error;
    }
    if (redisErrorKind(error) === 'transient') {
      this.report('registering throttle declarations', error);
      return undefined;
    }
    const failure = await this.describe(error);
    this.options.logger.error({ queue: this.options.queue, err: failure }, `the worker does not start: ${failure.message}`);
    this.emit(failure, true);
    return failure;
  }

  /** A task that runs again by itself (heartbeat, classification) failed: log sparingly, emit at most once a second. */
  report(task: string, error: unknown): void {
    if (this.closing()) return;
    if (redisErrorKind(error) === 'permanent') {
      void this.describe(error).then((failure) => this.log(task, failure, 'error'));
    } else {
      this.log(task, error instanceof Error ? error : new Error(String(error)), 'warn');
    }
  }

  /** The task succeeded: if it had been failing, say so once. */
  recovered(task: string): void {
    const log = this.failing.get(task);
    if (!log) return;
    this.failing.delete(task);
    this.options.logger.info({ queue: this.options.queue, task, failuresSinceLastLog: log.unlogged }, `${task} works again`);
  }

  /** A delivery call failed: reports it and returns how long (ms) its requests wait before trying again. */
  deliveryFailed(error: unknown): number {
    this.report('delivering jobs', error);
    this.deliveryRetryMs = Math.min(Math.max(DELIVERY_RETRY_FIRST_MS, this.deliveryRetryMs * 2), DELIVERY_RETRY_MOST_MS);
    return this.deliveryRetryMs;
  }

  deliverySucceeded(): void {
    if (this.deliveryRetryMs === 0) return;
    this.deliveryRetryMs = 0;
    this.recovered('delivering jobs');
  }

  private log(task: string, error: Error, level: 'warn' | 'error'): void {
    const now = performance.now();
    const log = this.failing.get(task);
    if (!log || now - log.loggedAt >= LOG_INTERVAL_MS) {
      this.options.logger[level](
        { queue: this.options.queue, task, err: error, failuresSinceLastLog: log?.unlogged ?? 0 },
        `${task} failed; retrying with backoff: ${error.message}`,
      );
      this.failing.set(task, { loggedAt: now, unlogged: 0 });
    } else {
      log.unlogged++;
    }
    this.emit(error, false);
  }

  private emit(error: Error, always: boolean): void {
    const now = performance.now();
    if (!always && now - this.lastEmitAt < EMIT_INTERVAL_MS) return;
    this.lastEmitAt = now;
    try {
      this.options.onError?.(error);
    } catch (thrown) {
      // No 'error' listener: EventEmitter throws, as Node means it to; but only once the gate's own state
      // (a rejected start, a retry) is settled, so throw it from a turn of its own.
      setImmediate(() => { throw thrown; });
    }
  }

  private async describe(error: unknown): Promise<RedisSetupError> {
    const context = { who: this.who, prefix: this.options.prefix, namespace: this.options.namespace };
    // Without a ready client (its connection was refused) the message just cannot name a denied key.
    const client = await Promise.race([this.client().catch(() => undefined), delay(CLIENT_WAIT_MS)]);
    try {
      return await describeRedisError(error, client, context);
    } catch {
      // Describing must never hide the error itself.
    }
    return new RedisSetupError(`${this.who}: ${error instanceof Error ? error.message : String(error)}`, 'ERR', error);
  }
}
