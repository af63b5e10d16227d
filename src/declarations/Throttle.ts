import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { CostSource, CostSpec } from './Cost';
import { KeyPart } from './Key';
import { Limit } from './Limit';
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
    readonly name: string,
    readonly limits: readonly Limit[],
    readonly keyParts: readonly KeyPart[] | undefined,
    readonly missing: Missing,
    readonly tokenRate?: Rate,
    readonly maxInFlight?: number,
    readonly costSpec?: CostSpec,
  ) {
    Object.freeze(this);
  }

  /** This declaration with some of its parts replaced. */
  private with(parts: { limits?: readonly Limit[]; keyParts?: readonly KeyPart[]; missing?: Missing; tokenRate?: Rate; maxInFlight?: number; costSpec?: CostSpec }): Throttle {
    return new Throttle(this.name, parts.limits ?? this.limits, parts.keyParts ?? this.keyParts, parts.missing ?? this.missing,
      parts.tokenRate ?? this.tokenRate, parts.maxInFlight ?? this.maxInFlight, parts.costSpec ?? this.costSpec);
  }

  static named(name: string): Throttle {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidThrottleError(`Throttle.named(${JSON.stringify(name)}): a throttle needs a non-empty name such as 'stripe'.`);
    }
    return new Throttle(name, [], undefined, Missing.SharedBucket);
  }

  /** At most `max` deliveries in any window of length `window` (ms, or '250ms', '1s', '1m', '1h', '1d'). */
  limit(max: number, window: WindowInput): Throttle {
    const limit: Limit = Object.freeze({
      max: checkLimitValue(this.name, max),
      windowMs: parseWindowMs(window, `Throttle '${this.name}': limit(${max}, ${JSON.stringify(window)})`),
    });
    for (const existing of this.limits) checkLimitPair(this.name, existing, limit);
    if (this.tokenRate) checkRateAgainstLimit(this.name, this.tokenRate, limit);
    const limits = [...this.limits, limit].sort((a, b) => a.windowMs - b.windowMs);
    return this.with({ limits: Object.freeze(limits) });
  }

  /**
   * A token bucket: on average `n` deliveries per `per`, at most `burst` (default 1: evenly spaced) at once.
   * An idle bucket admits `burst` together, then one every per / n; in any window of length t at most
   * burst + n * t / per deliveries go.
   */
  rate(n: number, per: WindowInput, options: { burst?: number } = {}): Throttle {
    if (this.tokenRate) {
      throw new InvalidThrottleError(`Throttle '${this.name}': rate() is declared twice; keep one rate per throttle (the stricter one).`);
    }
    const rate = checkRate(this.name, n, parseWindowMs(per, `Throttle '${this.name}': rate(${n}, ${JSON.stringify(per)})`), options?.burst ?? 1);
    for (const limit of this.limits) checkRateAgainstLimit(this.name, rate, limit);
    return this.with({ tokenRate: rate });
  }

  /**
   * At most `n` jobs of each bucket between delivery and completion, failure, a move to delayed or wait, or
   * removal, across every worker, process and queue that shares the throttle. A crashed worker's jobs count
   * until bullmq's stalled check takes them back.
   */
  concurrency(n: number): Throttle {
    if (this.maxInFlight !== undefined) {
      throw new InvalidThrottleError(`Throttle '${this.name}': concurrency() is declared twice; keep one (the lower one).`);
    }
    return this.with({ maxInFlight: checkConcurrency(this.name, n) });
  }

  /**
   * Each job counts `source` (a positive whole number read once, when the job is classified) against every
   * limit of this throttle, instead of 1. A job without a usable cost fails, unless `default` is given; one
   * costing more than a limit's N (a rate's burst, a concurrency's n) could never go, and fails.
   */
  cost(source: CostSource, options: { default?: number } = {}): Throttle {
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

  /** Jobs with the same values of these parts share a bucket; each bucket is held to the limits separately. */
  key(parts: readonly KeyPart[]): Throttle {
    if (!Array.isArray(parts) || parts.length === 0) {
      throw new InvalidThrottleError(
        `Throttle '${this.name}': key([]) needs at least one part, such as key([Key.data('customer')]); leave key() out for one bucket for every job.`,
      );
    }
    for (const part of parts) {
      if (!part || !['data', 'name', 'attribute'].includes((part as KeyPart).kind)) {
        throw new InvalidThrottleError(
          `Throttle '${this.name}': key part ${JSON.stringify(part)} is not a Key; build parts with Key.data(path), Key.name() or Key.attribute(name).`,
        );
      }
    }
    return this.with({ keyParts: Object.freeze([...parts]) });
  }

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
    if (this.limits.length === 0 && !this.tokenRate && this.maxInFlight === undefined) {
      throw new InvalidThrottleError(`Throttle '${this.name}' has no limit: add one, such as .limit(100, '1s'), .rate(100, '1s', { burst: 10 }) or .concurrency(5).`);
    }
    return this;
  }
}
