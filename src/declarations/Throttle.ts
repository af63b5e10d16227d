import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { AdaptiveOptions, AdaptiveSpec, adaptedLimit, checkAdaptive } from './Adaptive';
import { CostSource, CostSpec } from './Cost';
import { KeyPart } from './Key';
import { Limit } from './Limit';
import { hasLimits } from './LimitSpec';
import { Missing } from './Missing';
import { Rate } from './Rate';
import { checkConcurrency, checkLimitPair, checkLimitValue, checkRateAgainstLimit, checkRate } from './validateLimits';
import { parseWindowMs, WindowInput } from './window';

/**
 * A named throttle declaration: window limits, a rate and a concurrency, an optional key and a missing-key policy.
 * Immutable: every builder call returns a new declaration, so one can be shared and extended safely.
 */
export class Throttle {
  private constructor(
    /**
     * The throttle's name. Declarations of one name, from any worker on any queue, share one set of buckets in
     * one throttle namespace (`throttlePrefix`).
     */
    readonly name: string,
    /** The window limits (`limit`), shortest window first. Empty when none is declared. */
    readonly limits: readonly Limit[],
    /** The parts of the key (`key`). Undefined for an unkeyed throttle: one bucket for every job. */
    readonly keyParts: readonly KeyPart[] | undefined,
    /**
     * What a keyed throttle does with a job that lacks its key (`whenKeyMissing`): Missing.SharedBucket unless
     * declared. Unused by an unkeyed throttle.
     */
    readonly missing: Missing,
    /** The token bucket (`rate`). Undefined when no rate is declared. */
    readonly tokenRate?: Rate,
    /**
     * The most jobs (cost units, with a cost) of each bucket in flight at once (`concurrency`). Undefined when no
     * concurrency is declared.
     */
    readonly maxInFlight?: number,
    /** What each job counts instead of 1 (`cost`). Undefined when no cost is declared: each job counts 1. */
    readonly costSpec?: CostSpec,
    /** The limit that follows the API's 429s (`adaptive`), and how. Undefined when no limit is adaptive. */
    readonly adaptiveSpec?: AdaptiveSpec,
    /** The limit declared last (`limit`'s window, 'rate' or 'concurrency'): the one `adaptive` would adapt. */
    private readonly lastLimit?: 'rate' | 'concurrency' | number,
    /** The longest a job may wait on this throttle's full buckets (`maxWait`, ms). Undefined: as long as it takes. */
    readonly maxWaitMs?: number,
  ) {
    Object.freeze(this);
  }

  /** This declaration with some of its parts replaced. */
  private with(parts: { limits?: readonly Limit[]; keyParts?: readonly KeyPart[]; missing?: Missing; tokenRate?: Rate; maxInFlight?: number; costSpec?: CostSpec; adaptiveSpec?: AdaptiveSpec; lastLimit?: 'rate' | 'concurrency' | number; maxWaitMs?: number }): Throttle {
    return new Throttle(this.name, parts.limits ?? this.limits, parts.keyParts ?? this.keyParts, parts.missing ?? this.missing,
      parts.tokenRate ?? this.tokenRate, parts.maxInFlight ?? this.maxInFlight, parts.costSpec ?? this.costSpec,
      parts.adaptiveSpec ?? this.adaptiveSpec, parts.lastLimit ?? this.lastLimit, parts.maxWaitMs ?? this.maxWaitMs);
  }

  /**
   * Starts a declaration: a throttle with this name and nothing else yet. Add at least one limit, rate or
   * concurrency before using it. Its missing-key policy starts as Missing.SharedBucket.
   *
   * @example
   * Throttle.named('stripe').limit(100, '1s');
   * @param name - The throttle's name, not empty. Declarations of one name share one set of buckets.
   * @returns A new declaration.
   * @throws InvalidThrottleError when the name is empty or not a string.
   */
  static named(name: string): Throttle {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidThrottleError(`Throttle.named(${JSON.stringify(name)}): a throttle needs a non-empty name such as 'stripe'.`);
    }
    return new Throttle(name, [], undefined, Missing.SharedBucket);
  }

  /** This declaration keyed with the worker's fairness key in place of `Key.fairness()` (ThrottledWorker does this). */
  withFairnessKey(fairnessKey: readonly KeyPart[]): Throttle {
    if (!this.keyParts?.some((part) => part.kind === 'fairness')) return this;
    return this.with({ keyParts: Object.freeze(this.keyParts.flatMap((part) => (part.kind === 'fairness' ? fairnessKey : [part]))) });
  }

  /**
   * At most `max` deliveries in any window of length `window` (ms, or '250ms', '1s', '1m', '1h', '1d'). Several
   * limits all apply: a job must fit every one.
   *
   * @example
   * Throttle.named('stripe').limit(60, '1m').limit(20, '1s');
   * @param max - N: the most deliveries (cost units, with a cost) in any window, a positive whole number.
   * @param window - W: milliseconds, or text such as '250ms' or '1.5s'; a whole number of ms, at least 1.
   * @returns A new declaration with the limit added.
   * @throws InvalidThrottleError when `max` is not a positive whole number, the window does not parse or is
   * under 1 ms, another limit has the same window, or this limit could never apply alongside another limit or
   * the rate (for example 100 per 1s beside 60 per 1m).
   */
  limit(max: number, window: WindowInput): Throttle {
    const limit: Limit = Object.freeze({
      max: checkLimitValue(this.name, max),
      windowMs: parseWindowMs(window, `Throttle '${this.name}': limit(${max}, ${JSON.stringify(window)})`),
    });
    for (const existing of this.limits) checkLimitPair(this.name, existing, limit);
    if (this.tokenRate) checkRateAgainstLimit(this.name, this.tokenRate, limit);
    const limits = [...this.limits, limit].sort((a, b) => a.windowMs - b.windowMs);
    return this.with({ limits: Object.freeze(limits), lastLimit: limit.windowMs });
  }

  /**
   * A token bucket: on average `n` deliveries per `per`, at most `burst` (default 1: evenly spaced) at once.
   * An idle bucket admits `burst` together, then one every per / n; in any window of length t at most
   * burst + n * t / per deliveries go, counted where processors start: a processor may start up to its start
   * deadline H after its grant, so the rate is granted H short of its burst, and where the burst covers less
   * than 10 ms of H (burst 1 faster than 5 per second) grants go per / n + 10 ms apart, less what it covers:
   * `rate(100, '1s')` runs at 50 per second, `rate(100, '1s', { burst: 2 })` at 100 (docs/getting-started.md).
   *
   * @example
   * Throttle.named('sendgrid').rate(500, '1s', { burst: 50 });
   * @param n - The average number of deliveries (cost units, with a cost) per `per`, a positive whole number.
   * @param per - The period: milliseconds, or text such as '1s' or '1m'.
   * @param options - `burst`: the most an idle bucket admits at once (default 1: evenly spaced).
   * @returns A new declaration with the rate.
   * @throws InvalidThrottleError when a rate is already declared, `n` or `burst` is not a positive whole
   * number, `per` does not parse or is under 1 ms, or a declared limit could never apply alongside the rate.
   */
  rate(n: number, per: WindowInput, options: {
    /**
     * The most an idle bucket admits at once, a positive whole number; 1 spaces deliveries evenly, one every
     * per / n.
     * @default 1
     */
    burst?: number;
  } = {}): Throttle {
    if (this.tokenRate) {
      throw new InvalidThrottleError(`Throttle '${this.name}': rate() is declared twice; keep one rate per throttle (the stricter one).`);
    }
    const rate = checkRate(this.name, n, parseWindowMs(per, `Throttle '${this.name}': rate(${n}, ${JSON.stringify(per)})`), options?.burst ?? 1);
    for (const limit of this.limits) checkRateAgainstLimit(this.name, rate, limit);
    return this.with({ tokenRate: rate, lastLimit: 'rate' });
  }

  /**
   * At most `n` jobs of each bucket between delivery and completion, failure, a move to delayed or wait, or
   * removal, across every worker, process and queue that shares the throttle. A crashed worker's jobs count
   * until bullmq's stalled check takes them back. A `Grantor` refuses a throttle with a concurrency.
   *
   * @example
   * Throttle.named('scraper').key([Key.data('domain')]).concurrency(3);
   * @param n - The most jobs (cost units, with a cost) of each bucket in flight at once, a positive whole number.
   * @returns A new declaration with the concurrency.
   * @throws InvalidThrottleError when a concurrency is already declared, or `n` is not a positive whole number.
   */
  concurrency(n: number): Throttle {
    if (this.maxInFlight !== undefined) {
      throw new InvalidThrottleError(`Throttle '${this.name}': concurrency() is declared twice; keep one (the lower one).`);
    }
    return this.with({ maxInFlight: checkConcurrency(this.name, n), lastLimit: 'concurrency' });
  }

  /**
   * Makes the limit declared just before (a `rate` or a `limit`) follow the API: a RetryAfterError or
   * SlowDownError thrown by a job of this throttle multiplies its bucket's live limit by `decrease` (at most once
   * a window: the signals that follow within one come from deliveries made at the old limit), never below
   * `min`; each window (a rate's period) without a signal adds `increase`, never above the declared limit or
   * `max`. The live limit is kept in Redis per bucket, shared by every worker, and every grant is held to it; a
   * rate's burst stays as declared.
   *
   * @example
   * Throttle.named('partner').rate(50, '1s', { burst: 10 }).adaptive({ min: 5 });
   * @param options - `min` (required), `max`, `decrease` (default 0.5), `increase` (default a hundredth of the
   * ceiling, at least 1).
   * @returns A new declaration with the adaptive limit.
   * @throws InvalidThrottleError when no rate or window limit comes right before, `adaptive` is declared twice,
   * or an option is out of range (min above the declared limit, decrease not between 0 and 1).
   */
  adaptive(options: AdaptiveOptions): Throttle {
    if (this.adaptiveSpec) {
      throw new InvalidThrottleError(`Throttle '${this.name}': adaptive() is declared twice; one limit of a throttle adapts.`);
    }
    const target = this.lastLimit;
    const adapted = target === undefined || target === 'concurrency' ? undefined : adaptedLimit(target, this.limits, this.tokenRate);
    if (target === undefined || target === 'concurrency' || !adapted) {
      throw new InvalidThrottleError(
        `Throttle '${this.name}': adaptive() follows the rate or window limit it adapts, such as .rate(50, '1s').adaptive({ min: 5 }) or .limit(100, '1s').adaptive({ min: 10 })${target === 'concurrency' ? '; a concurrency does not adapt' : ''}.`,
      );
    }
    return this.with({ adaptiveSpec: checkAdaptive(this.name, target, adapted.n, options) });
  }

  /**
   * Each job counts `source` (a positive whole number read once, when the job is classified) against every
   * limit of this throttle, instead of 1. A job without a usable cost fails, unless `default` is given; one
   * costing more than a limit's N (a rate's burst, a concurrency's n) could never go, and fails.
   *
   * @example
   * Throttle.named('openai-tokens').cost(Cost.data('tokens'), { default: 1000 }).limit(90_000, '1m');
   * @param source - Where the cost is read: `Cost.data(path)` or `Cost.attribute(name)`.
   * @param options - `default`: what a job without a usable cost counts. Left out (the default), such a job
   * fails.
   * @returns A new declaration with the cost.
   * @throws InvalidThrottleError when a cost is already declared, `source` is not built by `Cost`, or `default`
   * is given and is not a positive whole number.
   */
  cost(source: CostSource, options: {
    /**
     * What a job without a usable cost counts, a positive whole number. Left out, such a job fails, without
     * retries (its processor does not run).
     * @default undefined (a job without a usable cost fails)
     */
    default?: number;
  } = {}): Throttle {
    if (this.costSpec) {
      throw new InvalidThrottleError(`Throttle '${this.name}': cost() is declared twice; keep one cost per throttle.`);
    }
    if (!source || (source.kind !== 'data' && source.kind !== 'attribute')) {
      throw new InvalidThrottleError(`Throttle '${this.name}': cost(${JSON.stringify(source)}) takes Cost.data(path) or Cost.attribute(name).`);
    }
    const fallback = options?.default;
    if (fallback !== undefined && (typeof fallback !== 'number' || !Number.isSafeInteger(fallback) || fallback < 1)) {
      throw new InvalidThrottleError(
        `Throttle '${this.name}': cost(…, { default: ${String(fallback)} }): the default must be a positive whole number, such as { default: 1000 }, or left out (a job without a cost then fails).`,
      );
    }
    return this.with({ costSpec: Object.freeze({ source, ...(fallback !== undefined ? { default: fallback } : {}) }) });
  }

  /**
   * The longest a job may wait on this throttle's full buckets (seed 002's TakeMaxDuration): a job whose bucket's
   * backlog and limits already put its start further away than that fails at once, and one still waiting when
   * this has passed fails then, with ThrottleWaitTimeoutError (an unrecoverable failure: no retry; its
   * `failedReason` names the throttle, the bucket and the wait). Its wait counts from when it first met a full
   * bucket of its class; a job is never delivered to a processor after its time is up. With several throttles
   * declaring one, a job's shortest applies.
   *
   * @example
   * Throttle.named('stripe').limit(100, '1s').maxWait('10m');
   * @param duration - Milliseconds, or text such as '30s' or '10m'; at least 1 ms.
   * @returns A new declaration with the longest wait.
   * @throws InvalidThrottleError when the duration does not parse or is under 1 ms, or maxWait is declared twice.
   */
  maxWait(duration: WindowInput): Throttle {
    if (this.maxWaitMs !== undefined) {
      throw new InvalidThrottleError(`Throttle '${this.name}': maxWait() is declared twice; keep one (the shorter one).`);
    }
    return this.with({ maxWaitMs: parseWindowMs(duration, `Throttle '${this.name}': maxWait(${JSON.stringify(duration)})`) });
  }

  /**
   * Jobs with the same values of these parts share a bucket; each bucket is held to the limits separately.
   * Without a key, every job shares one bucket. A later call replaces the key.
   *
   * @example
   * Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(10, '1s');
   * @param parts - One or more parts built with `Key.data(path)`, `Key.name()`, `Key.attribute(name)` or `Key.fairness()`.
   * @returns A new declaration with the key.
   * @throws InvalidThrottleError when `parts` is empty or not an array, or a part is not built by `Key`.
   */
  key(parts: readonly KeyPart[]): Throttle {
    if (!Array.isArray(parts) || parts.length === 0) {
      throw new InvalidThrottleError(
        `Throttle '${this.name}': key([]) needs at least one part, such as key([Key.data('customer')]); leave key() out for one bucket for every job.`,
      );
    }
    for (const part of parts) {
      if (!part || !['data', 'name', 'attribute', 'fairness'].includes((part as KeyPart).kind)) {
        throw new InvalidThrottleError(
          `Throttle '${this.name}': key part ${JSON.stringify(part)} is not a Key; build parts with Key.data(path), Key.name() or Key.attribute(name).`,
        );
      }
    }
    return this.with({ keyParts: Object.freeze([...parts]) });
  }

  /**
   * What a keyed throttle does with a job that lacks its key: a part's value is absent or null (a worker also
   * counts a value that is not a string, finite number or boolean as missing). Without this call,
   * Missing.SharedBucket: such jobs share one bucket. Missing.Unthrottled: such jobs are not subject to this
   * throttle. An unkeyed throttle ignores the policy. A later call replaces it.
   *
   * @example
   * Throttle.named('reports').key([Key.data('tenant')]).whenKeyMissing(Missing.Unthrottled).limit(2, '1s');
   * @param policy - Missing.SharedBucket or Missing.Unthrottled.
   * @returns A new declaration with the policy.
   * @throws InvalidThrottleError when `policy` is neither.
   */
  whenKeyMissing(policy: Missing): Throttle {
    if (policy !== Missing.SharedBucket && policy !== Missing.Unthrottled) {
      throw new InvalidThrottleError(
        `Throttle '${this.name}': whenKeyMissing(${JSON.stringify(policy)}) takes Missing.SharedBucket or Missing.Unthrottled.`,
      );
    }
    return this.with({ missing: policy });
  }

  /** Throws InvalidThrottleError unless the declaration can be used: called wherever a declaration is put to use. */
  assertUsable(): this {
    if (!hasLimits(this)) {
      throw new InvalidThrottleError(`Throttle '${this.name}' has no limit: add one, such as .limit(100, '1s'), .rate(100, '1s', { burst: 10 }) or .concurrency(5).`);
    }
    return this;
  }
}
