import { InvalidThrottleError } from '../errors/InvalidThrottleError';

/** Where a job's cost comes from: what it counts against every limit of its throttle. */
export type CostSource =
  | { readonly kind: 'data'; readonly path: string }
  | { readonly kind: 'attribute'; readonly name: string };

/** A throttle's cost: its source, and what a job without a usable cost counts instead (none: it fails). */
export interface CostSpec {
  readonly source: CostSource;
  readonly default?: number;
}

export const Cost = {
  /** A dotted path into job.data holding a positive whole number, such as Cost.data('tokens'). */
  data(path: string): CostSource {
    if (typeof path !== 'string' || path.length === 0 || path.split('.').some((segment) => segment.length === 0)) {
      throw new InvalidThrottleError(
        `Cost.data(${JSON.stringify(path)}): the path must be a non-empty dotted path into job.data such as 'tokens' or 'usage.tokens'.`,
      );
    }
    return Object.freeze({ kind: 'data', path });
  },
  /** An attribute computed once per job by the worker's `attributes` function. */
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
 * costing more could never go. Infinity when the throttle declares none of them.
 */
export function costCapacity(throttle: { readonly limits: readonly { max: number }[]; readonly tokenRate?: { burst: number }; readonly maxInFlight?: number }): number {
  return Math.min(Infinity, ...throttle.limits.map((l) => l.max), throttle.tokenRate?.burst ?? Infinity, throttle.maxInFlight ?? Infinity);
}
