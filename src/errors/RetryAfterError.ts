import { InvalidOptionError } from './InvalidOptionError';

/**
 * Thrown by a processor on a provider's "429, retry after N s": the job goes back, held in its bucket, without
 * counting an attempt (as bullmq's RateLimitError), and every bucket it drew from pauses for `retryAfterMs`,
 * for every worker (or only the bucket of `options.throttle`).
 */
export class RetryAfterError extends Error {
  /** How long the buckets pause (ms): the value given, rounded up to a whole millisecond. */
  readonly retryAfterMs: number;
  /**
   * The throttle whose bucket pauses, as named in `options.throttle`; undefined: every bucket the job draws
   * from pauses. A name that is not one of the job's throttles pauses nothing (the worker logs a warning) and
   * the job still goes back to wait.
   */
  readonly throttle?: string;

  /**
   * An error that pauses the job's buckets (or one throttle's) for `retryAfterMs` once the processor throws it.
   *
   * @example
   * throw new RetryAfterError(30_000, { throttle: 'stripe-per-customer' }); // "Retry-After: 30", that customer's bucket only
   * @param retryAfterMs - How long the buckets pause (ms), a positive number; rounded up to a whole millisecond.
   * @param options - Which throttle's bucket pauses (`throttle`); left out, every bucket the job draws from.
   * @throws InvalidOptionError when `retryAfterMs` is not a positive finite number.
   */
  constructor(retryAfterMs: number, options: {
    /**
     * The throttle whose bucket (the job's) pauses. A name that is not one of the job's throttles pauses
     * nothing (the worker logs a warning). Left out, every bucket the job draws from pauses.
     * @default undefined (every bucket the job draws from)
     */
    throttle?: string;
  } = {}) {
    if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0) {
      throw new InvalidOptionError(
        `new RetryAfterError(${String(retryAfterMs)}): the pause must be a positive number of milliseconds, such as new RetryAfterError(30_000) for "Retry-After: 30".`,
      );
    }
    super(`retry after ${Math.ceil(retryAfterMs)} ms${options.throttle ? ` (throttle '${options.throttle}')` : ''}`);
    this.name = new.target.name;
    this.retryAfterMs = Math.ceil(retryAfterMs);
    if (options.throttle !== undefined) this.throttle = options.throttle;
  }

  /**
   * Whether `error` is a RetryAfterError, also where `instanceof` cannot tell: bullmq rebuilds the error of a
   * sandboxed processor (a processor file) as a plain Error with its fields, and an app that loads both the
   * CommonJS and the ESM build has two classes. The worker uses this test; so can a processor's own catch.
   * @example
   * catch (error) { if (RetryAfterError.is(error)) throw error; ... }
   */
  static is(error: unknown): error is RetryAfterError {
    if (error instanceof RetryAfterError) return true;
    const candidate = error as { name?: unknown; retryAfterMs?: unknown } | null;
    return typeof candidate === 'object' && candidate !== null && candidate.name === 'RetryAfterError'
      && typeof candidate.retryAfterMs === 'number' && Number.isFinite(candidate.retryAfterMs) && candidate.retryAfterMs > 0;
  }
}
