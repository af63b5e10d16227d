import { InvalidThrottleError } from '../errors/InvalidThrottleError';
import { Limit } from './Limit';
import { Rate } from './Rate';

/**
 * What `Throttle.adaptive` takes: how the live limit follows the API's 429s.
 *
 * @example
 * Throttle.named('partner').rate(50, '1s', { burst: 10 }).adaptive({ min: 5, decrease: 0.5, increase: 2 });
 */
export interface AdaptiveOptions {
  /** The live limit never goes below this (deliveries per window, or a rate's n), a positive whole number. */
  readonly min: number;
  /**
   * The live limit never goes above this, nor above the declared limit; from min to the declared limit.
   * @default the declared limit
   */
  readonly max?: number;
  /** What a signal multiplies the live limit by, more than 0 and less than 1. @default 0.5 */
  readonly decrease?: number;
  /**
   * What each window (a rate's period) without a signal adds to the live limit, a positive whole number.
   * @default a hundredth of the ceiling (min(declared, max)), at least 1
   */
  readonly increase?: number;
}

/**
 * An adaptive limit, as declared: the limit it adapts (the throttle's rate, or its window limit of `target` ms)
 * and the options given. The ceiling, and the default increase, come from the limits merged across declarations.
 */
export interface AdaptiveSpec {
  /** The limit that adapts: 'rate', or the window limit of this length (ms). */
  readonly target: 'rate' | number;
  /** The least the live limit goes down to. */
  readonly min: number;
  /** The most it goes up to, when below the declared limit. */
  readonly max?: number;
  /** What a 429 multiplies it by. */
  readonly decrease: number;
  /** What each period without a 429 adds; undefined: a hundredth of the ceiling, at least 1. */
  readonly increase?: number;
}

/** What the limits hash carries of an adaptive limit (field a), worked out from the merged limits. */
export interface PublishedAdaptive {
  /** 'r' for the rate, else the window's length (ms). */
  readonly target: string;
  readonly min: number;
  /** The live limit's ceiling: the merged limit's N (a rate's n), or max when lower. */
  readonly ceiling: number;
  readonly decrease: number;
  readonly increase: number;
  /** One step's length (ms): the window, or the rate's period. */
  readonly periodMs: number;
}

const DEFAULT_DECREASE = 0.5;

/** The declared value of the limit an adaptive spec names, with its step length; undefined when it has none. */
export function adaptedLimit(target: 'rate' | number, limits: readonly Limit[], rate: Rate | undefined): { n: number; periodMs: number } | undefined {
  if (target === 'rate') return rate ? { n: rate.n, periodMs: rate.perMs } : undefined;
  const limit = limits.find((l) => l.windowMs === target);
  return limit ? { n: limit.max, periodMs: limit.windowMs } : undefined;
}

/** Checks `adaptive()`'s options against the limit it adapts (declared value n); returns the spec. */
export function checkAdaptive(throttle: string, target: 'rate' | number, n: number, options: AdaptiveOptions): AdaptiveSpec {
  const call = `Throttle '${throttle}': adaptive(${JSON.stringify(options)})`;
  const whole = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
  if (!options || !whole(options.min)) {
    throw new InvalidThrottleError(`${call}: min must be a positive whole number, the lowest the live limit may go, such as { min: 5 }.`);
  }
  if (options.min > n) {
    throw new InvalidThrottleError(`${call}: min ${options.min} is above the declared ${n}; give a min of at most ${n}.`);
  }
  if (options.max !== undefined && (!whole(options.max) || options.max < options.min || options.max > n)) {
    throw new InvalidThrottleError(`${call}: max must be a whole number from min (${options.min}) to the declared ${n}, or left out (the declared ${n}).`);
  }
  const decrease = options.decrease ?? DEFAULT_DECREASE;
  if (typeof decrease !== 'number' || !(decrease > 0 && decrease < 1)) {
    throw new InvalidThrottleError(`${call}: decrease must be more than 0 and less than 1, such as { decrease: 0.5 } (halve on each 429), or left out.`);
  }
  if (options.increase !== undefined && !whole(options.increase)) {
    throw new InvalidThrottleError(`${call}: increase must be a positive whole number added each window without a 429, such as { increase: 1 }, or left out.`);
  }
  return Object.freeze({
    target, min: options.min, decrease,
    ...(options.max !== undefined ? { max: options.max } : {}),
    ...(options.increase !== undefined ? { increase: options.increase } : {}),
  });
}

export function sameAdaptive(a: AdaptiveSpec | undefined, b: AdaptiveSpec | undefined): boolean {
  if (!a || !b) return true;
  return a.target === b.target && a.min === b.min && a.max === b.max && a.decrease === b.decrease && a.increase === b.increase;
}

export function describeAdaptive(spec: AdaptiveSpec): string {
  const on = spec.target === 'rate' ? 'the rate' : `the ${spec.target} ms window`;
  return `adaptive on ${on} ${JSON.stringify({ min: spec.min, max: spec.max, decrease: spec.decrease, increase: spec.increase })}`;
}

/** The limits hash's view of an adaptive limit over the merged limits; undefined when the target is gone. */
export function publishedAdaptive(spec: AdaptiveSpec, limits: readonly Limit[], rate: Rate | undefined): PublishedAdaptive | undefined {
  const adapted = adaptedLimit(spec.target, limits, rate);
  if (!adapted) return undefined;
  const ceiling = Math.min(adapted.n, spec.max ?? adapted.n);
  return {
    target: spec.target === 'rate' ? 'r' : String(spec.target),
    min: Math.min(spec.min, ceiling),
    ceiling,
    decrease: spec.decrease,
    increase: spec.increase ?? Math.max(1, Math.round(ceiling / 100)),
    periodMs: adapted.periodMs,
  };
}

/** Field a of the limits hash (lua/includes/adaptiveLimit.lua reads it). */
export function adaptiveField(published: PublishedAdaptive): string {
  return `${published.target} ${published.min} ${published.ceiling} ${published.decrease} ${published.increase} ${published.periodMs}`;
}
