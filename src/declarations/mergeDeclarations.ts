import { ThrottleConflictError } from '../errors/ThrottleConflictError';
import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { AdaptiveSpec, describeAdaptive, sameAdaptive } from './Adaptive';
import { CostSpec, describeCost, sameCost } from './Cost';
import { describeKey, KeyPart, sameKey } from './Key';
import { Limit } from './Limit';
import { LimitFields, limitsOf, lookBackMs, unknownKind } from './LimitSpec';
import { Missing, strictestMissing } from './Missing';
import { Rate, stricterRate } from './Rate';
import { ThrottleSpec } from './ThrottleSpec';

/** What applies to a throttle name once every live declaration of it is combined. */
export interface EffectiveThrottle {
  /** The throttle's name, shared by every declaration merged. */
  readonly name: string;
  /** Every declared limit; for one window, the smallest N. Sorted by window. */
  readonly limits: readonly Limit[];
  /** The key every declaration gives (they must agree). Undefined for an unkeyed throttle: one bucket. */
  readonly keyParts: readonly KeyPart[] | undefined;
  /** The strictest declared missing-key policy: Missing.SharedBucket when any declares it, else Unthrottled. */
  readonly missing: Missing;
  /** The strictest declared rate (the lowest average and the lowest burst), if any declares one. */
  readonly tokenRate?: Rate;
  /** The lowest declared concurrency, if any declares one. */
  readonly maxInFlight?: number;
  /** The cost every declaration gives (they must agree). Undefined when none declares one: each job counts 1. */
  readonly costSpec?: CostSpec;
  /**
   * The adaptive limit declarations agree on, if any declares one (declarations without it still adapt: it
   * only ever lowers what they declare).
   */
  readonly adaptiveSpec?: AdaptiveSpec;
  /** The shortest declared longest wait on its full buckets (ms), if any declares one (see Throttle.maxWait). */
  readonly maxWaitMs?: number;
  /**
   * The longest lease (ms) of a worker in leased delivery that declares this throttle, or start deadline an
   * exact worker keeps on its rate (validateLimits' rateStartDeadlineMs): a rate's tokens are granted that much
   * short of its burst (see lua/includes/rateCounter.lua). 0 when none, and when merged from declarations alone.
   */
  readonly rateLeaseMs: number;
  /**
   * The longest lease of a worker in leased delivery that declares this throttle (0: none): a leased pool's
   * tokens are granted within the burst less what the rate refills in that lease, so one job may cost no more.
   */
  readonly rateLeasedMs: number;
  /** How many declarations were combined. */
  readonly declarations: number;
}

/**
 * Combines same-named declarations, from any worker on any queue, into the strictest combination:
 * every limit applies, the lowest rate and burst, the lowest concurrency, the shortest maxWait, SharedBucket beats Unthrottled, and a
 * different key or cost is a conflict. A pure function: it reads and writes nothing in Redis.
 *
 * @example
 * mergeDeclarations([Throttle.named('stripe').limit(100, '1s'), Throttle.named('stripe').limit(80, '1s')]);
 * @param declarations - One or more declarations of one name (Throttle or ThrottleSpec).
 * @returns The frozen effective throttle, with `rateLeaseMs` and `rateLeasedMs` 0.
 * @throws InvalidThrottleError when `declarations` is empty, a declaration has no limit, rate or concurrency,
 * or two declarations have different names.
 * @throws ThrottleConflictError when two declarations have different keys or different costs.
 */
export function mergeDeclarations(declarations: readonly ThrottleSpec[]): EffectiveThrottle {
  if (declarations.length === 0) {
    throw new InvalidThrottleError('mergeDeclarations([]): there is nothing to merge; pass at least one declaration.');
  }
  const [first] = declarations;
  const byWindow = new Map<number, number>();
  let missing = first.missing;
  let rate: Rate | undefined;
  let maxInFlight: number | undefined;
  let adaptive: AdaptiveSpec | undefined;
  let maxWaitMs: number | undefined;
  for (const declaration of declarations) {
    const declared = limitsOf(declaration);
    if (declared.length === 0) {
      throw new InvalidThrottleError(`Throttle '${declaration.name}' has no limit: add one, such as .limit(100, '1s'), .rate(100, '1s') or .concurrency(5).`);
    }
    if (declaration.name !== first.name) {
      throw new InvalidThrottleError(
        `mergeDeclarations: '${declaration.name}' and '${first.name}' are different throttles; merge declarations of one name at a time.`,
      );
    }
    if (!sameKey(declaration.keyParts, first.keyParts)) {
      throw new ThrottleConflictError(
        `Throttle '${first.name}' is declared with key ${describeKey(first.keyParts)} and with key ${describeKey(declaration.keyParts)}: one name identifies one set of buckets. Give one of them another name, or declare the same key everywhere.`,
      );
    }
    if (!sameCost(declaration.costSpec, first.costSpec)) {
      throw new ThrottleConflictError(
        `Throttle '${first.name}' is declared with cost ${describeCost(first.costSpec)} and with cost ${describeCost(declaration.costSpec)}: one throttle counts one cost. Give one of them another name, or declare the same cost everywhere.`,
      );
    }
    if (!sameAdaptive(adaptive, declaration.adaptiveSpec)) {
      throw new ThrottleConflictError(
        `Throttle '${first.name}' is declared ${describeAdaptive(adaptive!)} and ${describeAdaptive(declaration.adaptiveSpec!)}: one throttle's live limit follows one rule. Declare the same adaptive() everywhere, or leave it out of all but one.`,
      );
    }
    adaptive ??= declaration.adaptiveSpec;
    if (declaration.maxWaitMs !== undefined) maxWaitMs = Math.min(maxWaitMs ?? Infinity, declaration.maxWaitMs);
    missing = strictestMissing(missing, declaration.missing);
    // Each kind merges to its strictest: for one window the smallest N, the stricter rate, the lowest concurrency.
    for (const limit of declared) {
      switch (limit.kind) {
        case 'window': {
          const known = byWindow.get(limit.windowMs);
          byWindow.set(limit.windowMs, known === undefined ? limit.max : Math.min(known, limit.max));
          break;
        }
        case 'rate':
          rate = stricterRate(rate, limit.rate);
          break;
        case 'concurrency':
          maxInFlight = Math.min(maxInFlight ?? Infinity, limit.n);
          break;
        default:
          unknownKind(limit);
      }
    }
  }
  const limits = [...byWindow.entries()]
    .sort(([a], [b]) => a - b)
    .map(([windowMs, max]) => Object.freeze({ max, windowMs }));
  return Object.freeze({
    name: first.name,
    limits: Object.freeze(limits),
    keyParts: first.keyParts,
    missing,
    ...(rate ? { tokenRate: rate } : {}),
    ...(maxInFlight !== undefined ? { maxInFlight } : {}),
    ...(first.costSpec ? { costSpec: first.costSpec } : {}),
    ...(adaptive ? { adaptiveSpec: adaptive } : {}),
    ...(maxWaitMs !== undefined ? { maxWaitMs } : {}),
    rateLeaseMs: 0,
    rateLeasedMs: 0,
    declarations: declarations.length,
  });
}

/**
 * The longest time a throttle's counts look back: its longest window, or the time its rate takes to fill a
 * burst (a bucket idle that long admits its whole burst whatever it held before).
 */
export function longestSpanMs(throttle: LimitFields): number {
  return Math.max(0, ...limitsOf(throttle).map(lookBackMs));
}
