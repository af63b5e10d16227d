import { KeyValue } from '../declarations/Key';
import { Limit } from '../declarations/Limit';
import { checkLimitPair, checkLimitValue } from '../declarations/validateLimits';
import { parseWindowMs, WindowInput } from '../declarations/window';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runSetLimitOverride, UNTIL_CLEARED } from '../lua/calls/setLimitOverride';
import { RedisClient } from '../redis/connection';

/**
 * A limit as setLimits takes it: at most `max` in any window of `window`.
 *
 * @example
 * await admin.setLimits('stripe', [{ max: 50, window: '1s' }, { max: 1000, window: '1m' }]);
 */
export interface LimitInput {
  /** N: the most deliveries of one bucket in any one window (cost units, with a cost), a positive whole number. */
  max: number;
  /** The window: milliseconds (a whole number, at least 1), or text such as '250ms', '1s', '1m'. */
  window: WindowInput;
}

/**
 * Options of ThrottleAdmin.setLimits: which bucket the override is for, and how long it lasts.
 *
 * @example
 * await admin.setLimits('stripe-per-customer', [{ max: 100, window: '1s' }], { key: ['bigco'], ttlMs: 600_000 });
 */
export interface SetLimitsOptions {
  /**
   * One bucket (a plan tier): its key values (null for the missing-key bucket); omitted: the whole throttle.
   * @default undefined (the whole throttle)
   */
  key?: readonly KeyValue[] | null;
  /**
   * The override lapses after this long (ms, a positive number, rounded up); omitted: until cleared.
   * @default undefined (until clearLimits)
   */
  ttlMs?: number;
}

/** An override in force: its limits, and until when (ms, Redis clock; null: until cleared). */
export interface LimitOverride {
  /** The limits that replace the declared window limits, shortest window first. */
  limits: Limit[];
  /** When the override lapses (ms, Redis clock); null: until cleared. */
  until: number | null;
}

/** Validated limits, as a declaration's would be (positive N, a window, no limit that can never apply). */
export function checkedLimits(name: string, limits: readonly LimitInput[]): Limit[] {
  if (!Array.isArray(limits) || limits.length === 0) {
    throw new InvalidOptionError(`setLimits('${name}', …): give at least one limit, such as [{ max: 50, window: '1s' }]; clearLimits('${name}') goes back to the declared ones.`);
  }
  const checked: Limit[] = [];
  for (const limit of limits) {
    const next = { max: checkLimitValue(name, limit?.max), windowMs: parseWindowMs(limit?.window, `setLimits('${name}', [{ max: ${limit?.max}, window: ${JSON.stringify(limit?.window)} }])`) };
    for (const known of checked) checkLimitPair(name, known, next);
    checked.push(next);
  }
  return checked.sort((a, b) => a.windowMs - b.windowMs);
}

export function ttlOf(name: string, ttlMs: number | undefined): number {
  if (ttlMs === undefined) return 0;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidOptionError(`setLimits('${name}', …, { ttlMs: ${String(ttlMs)} }): ttlMs must be a positive number of ms; leave it out for an override until cleared.`);
  }
  return Math.ceil(ttlMs);
}

/** Sets (limits given) or clears (null) an override (lua/setLimitOverride-2.lua); segment '' with null: every override. */
export async function writeOverride(runner: ScriptRunner, keys: ThrottleKeys, name: string, segment: string, limits: readonly Limit[] | null, ttlMs = 0): Promise<void> {
  await runSetLimitOverride(runner, {
    overrides: keys.limitOverrides(name), limits: keys.effectiveLimits(name), segment, windows: limits, untilMs: UNTIL_CLEARED, forMs: ttlMs,
  });
}

function parse(text: string | null, nowMs: number): LimitOverride | null {
  const match = text === null ? null : /^(\d+)\|(.*)$/.exec(text);
  if (!match) return null;
  const untilMs = Number(match[1]);
  if (untilMs !== 0 && untilMs <= nowMs) return null;
  const limits = [...match[2].matchAll(/(\d+):(\d+)/g)].map((m) => ({ windowMs: Number(m[1]), max: Number(m[2]) }));
  return { limits, until: untilMs === 0 ? null : untilMs };
}

/** The overrides in force at nowMs: the whole throttle's, and how many buckets have their own. */
export async function readOverrides(ns: RedisClient, keys: ThrottleKeys, name: string, nowMs: number): Promise<{ throttle: LimitOverride | null; buckets: number }> {
  return overridesInForce(await ns.hgetall(keys.limitOverrides(name)), nowMs);
}

/** The overrides in force at nowMs of a throttle whose overrides hash reads `flat`. */
export function overridesInForce(flat: Readonly<Record<string, string>>, nowMs: number): { throttle: LimitOverride | null; buckets: number } {
  let buckets = 0;
  for (const [field, text] of Object.entries(flat)) if (field !== '*' && parse(text, nowMs)) buckets++;
  return { throttle: parse(flat['*'] ?? null, nowMs), buckets };
}

export async function readBucketOverride(ns: RedisClient, keys: ThrottleKeys, name: string, segment: string, nowMs: number): Promise<LimitOverride | null> {
  return parse(await ns.hget(keys.limitOverrides(name), segment), nowMs);
}
