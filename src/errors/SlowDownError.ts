/**
 * Thrown by a processor when the API answers "429 Too Many Requests" without saying for how long: the job goes
 * back, held in its bucket, without counting an attempt (as bullmq's RateLimitError), and the live limit of each
 * adaptive throttle it draws from (`Throttle.adaptive`; or only `options.throttle`'s) is lowered in its bucket.
 * With a Retry-After, throw RetryAfterError: it lowers adaptive limits the same way, and pauses the buckets too.
 */
export class SlowDownError extends Error {
  /**
   * The throttle whose live limit is lowered, as named in `options.throttle`; undefined: every adaptive throttle
   * the job draws from.
   */
  readonly throttle?: string;

  /**
   * @example
   * if (response.status === 429) throw new SlowDownError({ throttle: 'partner' });
   * @param options - Which throttle's live limit is lowered (`throttle`); left out, every adaptive throttle of the job.
   */
  constructor(options: {
    /**
     * The throttle whose live limit (the job's bucket's) is lowered. Left out, every adaptive throttle the job
     * draws from.
     * @default undefined (every adaptive throttle the job draws from)
     */
    throttle?: string;
  } = {}) {
    super(`slow down${options.throttle ? ` (throttle '${options.throttle}')` : ''}`);
    this.name = new.target.name;
    if (options.throttle !== undefined) this.throttle = options.throttle;
  }

  /**
   * Whether `error` is a SlowDownError, also where `instanceof` cannot tell (a sandboxed processor's error is
   * rebuilt as a plain Error with its fields; an app may load both the CommonJS and the ESM build).
   */
  static is(error: unknown): error is SlowDownError {
    if (error instanceof SlowDownError) return true;
    const candidate = error as { name?: unknown } | null;
    return typeof candidate === 'object' && candidate !== null && candidate.name === 'SlowDownError';
  }
}
