import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { LimitFields, limitsOf, unknownKind } from './LimitSpec';

/** Where a job's cost comes from: what it counts against every limit of its throttle. */
export type CostSource =
  | {
    /** The cost is read from job.data. */
    readonly kind: 'data';
    /** The dotted path into job.data, such as 'tokens' or 'usage.tokens'. */
    readonly path: string;
  }
  | {
    /** The cost is an attribute the worker's `attributes` function computes once per job. */
    readonly kind: 'attribute';
    /** The attribute's name. */
    readonly name: string;
  };

/** A throttle's cost: its source, and what a job without a usable cost counts instead (none: it fails). */
export interface CostSpec {
  /** Where each job's cost is read from, once, when the job is classified. */
  readonly source: CostSource;
  /**
   * What a job counts when its cost is missing or is not a positive whole number; itself a positive whole
   * number. Undefined: such a job fails as it is delivered, without its processor running or a retry.
   * @default undefined
   */
  readonly default?: number;
}

/**
 * Builds the source of a throttle's cost, for `Throttle.cost`: what each job counts against every limit of the
 * throttle instead of 1.
 *
 * @example
 * Throttle.named('openai-tokens').cost(Cost.data('tokens')).limit(90_000, '1m');
 */
export const Cost = {
  /**
   * A dotted path into job.data holding a positive whole number, such as Cost.data('tokens').
   *
   * @param path - A non-empty dotted path, such as 'tokens' or 'usage.tokens'.
   * @returns A frozen cost source.
   * @throws InvalidThrottleError when the path is empty or has an empty segment ('a..b').
   */
  data(path: string): CostSource {
    if (typeof path !== 'string' || path.length === 0 || path.split('.').some((segment) => segment.length === 0)) {
      throw new InvalidThrottleError(
        `Cost.data(${JSON.stringify(path)}): the path must be a non-empty dotted path into job.data such as 'tokens' or 'usage.tokens'.`,
      );
    }
    return Object.freeze({ kind: 'data', path });
  },
  /**
   * An attribute computed once per job by the worker's `attributes` function; it must be a positive whole number.
   *
   * @param name - The attribute's name, not empty.
   * @returns A frozen cost source.
   * @throws InvalidThrottleError when the name is empty or not a string.
   */
  attribute(name: string): CostSource {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidThrottleError(`Cost.attribute(${JSON.stringify(name)}): the attribute name must be a non-empty string.`);
    }
    return Object.freeze({ kind: 'attribute', name });
  },
};

export function describeCost(cost: CostSpec | undefined): string {
  if (!cost) return 'no cost (1 per job)';
  const source = cost.source.kind === 'data' ? `Cost.data(${JSON.stringify(cost.source.path)})` : `Cost.attribute(${JSON.stringify(cost.source.name)})`;
  return cost.default === undefined ? source : `${source} with default ${cost.default}`;
}

export function sameCost(a: CostSpec | undefined, b: CostSpec | undefined): boolean {
  return describeCost(a) === describeCost(b);
}

/**
 * The most one job may cost in this throttle: its smallest window N, its rate's burst, its concurrency. A job
 * costing more could never go. A rate whose tokens are leased to pools (`rateLeasedMs`, lua/includes/
 * rateCounter.lua) grants at most its burst less what it refills in that lease at once; one job's tokens
 * granted together are checked alone, and may take the whole burst. Infinity when the throttle declares none.
 */
export function costCapacity(throttle: LimitFields & { readonly rateLeasedMs?: number }): number {
  return Math.min(Infinity, ...limitsOf(throttle).map((limit) => {
    switch (limit.kind) {
      case 'window': return limit.max;
      case 'rate': return rateCapacity(throttle);
      case 'concurrency': return limit.n;
      default: return unknownKind(limit);
    }
  }));
}

/** The most one job may take of the throttle's rate at once (Infinity with no rate). */
export function rateCapacity(throttle: { readonly tokenRate?: { n: number; perMs: number; burst: number }; readonly rateLeasedMs?: number }): number {
  const rate = throttle.tokenRate;
  if (!rate) return Infinity;
  // c tokens fit an idle pool when c * perMs <= burst * perMs - leaseMs * n (whole numbers: no rounding).
  return Math.floor((rate.burst * rate.perMs - (throttle.rateLeasedMs ?? 0) * rate.n) / rate.perMs);
}
