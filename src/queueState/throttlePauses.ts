import { KeyValue } from '../declarations/Key';
import { InvalidOptionError } from '../errors/InvalidOptionError';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runPauseThrottle, WHOLE_THROTTLE } from '../lua/calls/pauseThrottle';
import { EVERY_PAUSE, runResumeThrottle } from '../lua/calls/resumeThrottle';
import { EVERY_BUCKET, runWakeBuckets } from '../lua/calls/wakeBuckets';
import { RedisClient } from '../redis/connection';

/**
 * How a pause is asked for (ThrottleAdmin.pause): for a while, until a time (ms, Redis clock), or (neither) until
 * resumed; of the whole throttle, or of one bucket.
 *
 * @example
 * await admin.pause('stripe', { forMs: 60_000 });              // every bucket, for a minute
 * await admin.pause('stripe-per-customer', { key: ['acme'] }); // one bucket, until resumed
 */
export interface PauseOptions {
  /**
   * How long the pause lasts (ms), from now on the Redis clock: a positive number. Give it or `untilMs`, not both.
   * @default undefined (with no untilMs either: until resumed)
   */
  forMs?: number;
  /**
   * When the pause ends (ms since the epoch, Redis clock): a time after now. Give it or `forMs`, not both.
   * @default undefined (with no forMs either: until resumed)
   */
  untilMs?: number;
  /**
   * One bucket: its key values (null for the missing-key bucket); omitted: every bucket of the throttle.
   * @default undefined (every bucket)
   */
  key?: readonly KeyValue[] | null;
}

/**
 * The pauses in force on a throttle (ThrottleStats.paused, the `throttle:paused` event): the whole throttle's,
 * and how many of its buckets are paused on their own.
 */
export interface ThrottlePause {
  /** Every bucket of the throttle is paused until then (ms, Redis clock; null: until resumed); undefined: not paused. */
  all?: {
    /** When the whole throttle's pause ends (ms, Redis clock); null: until resumed. */
    until: number | null;
  };
  /** Buckets paused on their own (RetryAfterError, admin.pause with a key). */
  buckets: number;
}

/** Until when (ms, Redis clock; 0: until resumed) a pause asked for at `nowMs` lasts. */
export function pauseUntilMs(options: PauseOptions, nowMs: number): number {
  const { forMs, untilMs } = options;
  if (forMs !== undefined && untilMs !== undefined) {
    throw new InvalidOptionError(`pause: give forMs (${forMs}) or untilMs (${untilMs}), not both.`);
  }
  if (forMs !== undefined) {
    if (typeof forMs !== 'number' || !Number.isFinite(forMs) || forMs <= 0) throw new InvalidOptionError(`pause: forMs ${String(forMs)} must be a positive number of ms, such as { forMs: 60_000 }.`);
    return Math.ceil(nowMs + forMs);
  }
  if (untilMs !== undefined) {
    if (typeof untilMs !== 'number' || !Number.isFinite(untilMs) || untilMs <= nowMs) {
      throw new InvalidOptionError(`pause: untilMs ${String(untilMs)} must be a time (ms, Redis clock) after now (${nowMs}).`);
    }
    return Math.ceil(untilMs);
  }
  return 0;
}

/** Sets a pause (lua/pauseThrottle-2.lua; forMs: from now on the Redis clock, instead of untilMs): resolves to the pause now in force on that field (ms; 0: until resumed). */
export async function setPause(runner: ScriptRunner, keys: ThrottleKeys, name: string, segment: string, untilMs: number, forMs = 0): Promise<number> {
  const reply = await runPauseThrottle(runner, { pauses: keys.throttlePauses(name), limits: keys.effectiveLimits(name), segment, untilMs, forMs });
  return reply.untilMs;
}

/** Lifts pauses (lua/resumeThrottle-2.lua: '' every one) and wakes what waits on them in each queue (lua/wakeBuckets-3.lua). */
export async function liftPause(
  namespace: ScriptRunner, queues: ScriptRunner, keys: ThrottleKeys, name: string, segment: string,
  queueKeys: readonly { wakeups: string; leaseRoom: string; marker: string }[],
): Promise<number> {
  const lifted = await runResumeThrottle(namespace, { pauses: keys.throttlePauses(name), limits: keys.effectiveLimits(name), segment });
  const bucket = segment === EVERY_PAUSE || segment === WHOLE_THROTTLE ? EVERY_BUCKET : segment;
  for (const q of queueKeys) await runWakeBuckets(queues, { wakeups: q.wakeups, leaseRoom: q.leaseRoom, marker: q.marker, throttle: name, bucket });
  return lifted;
}

/** A stored pause as in force at nowMs: until when (ms), null until resumed, undefined when over or absent. */
function inForce(value: string | null | undefined, nowMs: number): number | null | undefined {
  if (value === null || value === undefined) return undefined;
  const until = Number(value);
  if (until === 0) return null;
  return until > nowMs ? until : undefined;
}

/** The throttle's pauses in force at nowMs, as the delivery scripts see them. */
export async function readPauses(ns: RedisClient, keys: ThrottleKeys, name: string, nowMs: number): Promise<ThrottlePause | null> {
  return pausesInForce(await ns.hgetall(keys.throttlePauses(name)), nowMs);
}

/** The pauses in force at nowMs of a throttle whose pauses hash reads `flat`. */
export function pausesInForce(flat: Readonly<Record<string, string>>, nowMs: number): ThrottlePause | null {
  let all: ThrottlePause['all'];
  let buckets = 0;
  for (const [field, value] of Object.entries(flat)) {
    const until = inForce(value, nowMs);
    if (until === undefined) continue;
    if (field === '*') all = { until };
    else buckets++;
  }
  return all || buckets > 0 ? { ...(all ? { all } : {}), buckets } : null;
}

/**
 * The pause in force on one bucket at nowMs (ms; null: until resumed), the throttle's own included; undefined: none.
 * From its throttle's pauses hash: the whole throttle's field ('*') and the bucket's own.
 */
export function bucketPauseInForce(all: string | null, own: string | null, nowMs: number): number | null | undefined {
  const inForceNow = [all, own].map((value) => inForce(value, nowMs));
  if (inForceNow.includes(null)) return null;
  const ends = inForceNow.filter((until): until is number => until !== undefined);
  return ends.length > 0 ? Math.max(...ends) : undefined;
}
