import { KeyValue } from '../declarations/Key';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { MISSING_KEY_BUCKET, UNKEYED_BUCKET } from '../keys/keyEncoding';
import { entriesDeclaring } from '../queueState/queueConfig';
import type { RegistryEntry } from '../queueState/registryEntry';
import { isClusterClient } from '../redis/clusterNodes';
import { AdminContext } from './adminContext';
import { readBucketFigures } from './bucketFigures';
import { bucketSegmentOf } from './bucketSegment';
import { DispatchDelayStats, readDispatchDelay } from './dispatchDelayStats';
import { bindingNow, effectiveRate } from './effectiveRate';
import { holdTimes } from './holdTimes';
import { readBucketOverride, readOverrides } from './limitOverrides';
import { nextRoomAt } from './nextRoom';
import { FigureSource, lastWindowOf, readThrottleFigures, topBucketsOf } from './throttleFigures';
import { throttleSummary } from './throttleSummary';
import { BucketStats, ThrottleStats } from './types';
import { adaptedLimits, readAdaptiveLimit, readAdaptiveThrottle } from './adaptiveReading';

/** What a throttle does over every queue that declares it (ThrottleAdmin.throttleStats). */
export async function readThrottleStats(admin: AdminContext, name: string, options: { top?: number }): Promise<ThrottleStats> {
  const top = options.top ?? 10;
  const now = await admin.connections.nowMs();
  const entries = await admin.registry.liveEntries(now);
  const throttle = await admin.registry.effective(name, entries);
  const declaring = entriesDeclaring(entries, name);
  const [figures, dispatchDelay] = await Promise.all([
    readThrottleFigures(figureSource(admin), throttle, admin.registry.queuesOf(declaring).map((q) => q.throttleStats(name)), top),
    dispatchDelayOf(admin, declaring),
  ]);
  const { totals, overrides } = figures;
  const adaptive = await readAdaptiveThrottle(admin.connections.nsRunner, admin.keys, throttle, figures.adapted);
  return {
    ...throttleSummary(throttle, declaring.length),
    // An override replaces the declared limits while it lasts.
    ...(overrides.throttle ? { limits: overrides.throttle.limits.map((limit) => ({ ...limit })) } : {}),
    queues: [...new Set(declaring.map((entry) => admin.registry.queueName(entry)))].sort(),
    activeBuckets: figures.activeBuckets,
    bucketsAtLimit: figures.bucketsAtLimit,
    waiting: totals.waiting,
    topBuckets: topBucketsOf(totals, top),
    lastWindow: lastWindowOf(throttle, figures),
    deliveredTotal: totals.delivered,
    limitedTotal: totals.limited,
    tokensExpired: totals.expired,
    oldestWaitingMs: totals.oldestWaitingMs,
    holdTimes: holdTimes(totals.delivered, totals.held),
    recoveryHold: figures.recoveryHold,
    paused: figures.paused,
    limitSource: overrides.throttle ? 'override' : 'declared',
    overrides,
    adaptive,
    effective: effectiveRate(overrides.throttle?.limits ?? throttle.limits, throttle.tokenRate, concurrencyOf(throttle, dispatchDelay)),
    dispatchDelay,
    at: figures.nowMs,
  };
}

/** Where readThrottleFigures reads: on one Redis server (no Cluster, no grantor option), one script reads it all. */
function figureSource(admin: AdminContext): FigureSource {
  return { keys: admin.keys, namespace: admin.connections.nsRunner, queues: admin.connections.runner, oneNode: !admin.connections.grantorConnection && !isClusterClient(admin.connections.client) };
}

/** One bucket of a throttle against the limits in force (ThrottleAdmin.throttleBucket). */
export async function readBucketStats(admin: AdminContext, name: string, key: readonly KeyValue[] | null): Promise<BucketStats> {
  const now = await admin.connections.nowMs();
  const entries = await admin.registry.liveEntries(now);
  const throttle = await admin.registry.effective(name, entries);
  const bucket = bucketSegmentOf(name, throttle, key ?? null);
  // The limits this bucket counts against: its own override, the throttle's, or the declared ones.
  // The limits it counts against: its own override, the throttle's, or the declared ones (read first: they
  // say which counters to read; they change rarely).
  const override = (await readBucketOverride(admin.connections.ns, admin.keys, name, bucket, now)) ?? (await readOverrides(admin.connections.ns, admin.keys, name, now)).throttle;
  // An adaptive limit lowered by 429s caps what the declarations or an override say.
  const adaptive = await readAdaptiveLimit(admin.connections.nsRunner, admin.keys, throttle, bucket);
  const inForce = adaptedLimits(override?.limits ?? throttle.limits, throttle.tokenRate, adaptive);
  const declaring = entriesDeclaring(entries, name);
  const [figures, dispatchDelay] = await Promise.all([
    readBucketFigures(figureSource(admin), { ...throttle, ...(inForce.rate ? { tokenRate: inForce.rate } : {}) }, bucket, inForce.limits, admin.registry.queuesOf(declaring).map((q) => q.throttleStats(name))),
    throttle.maxInFlight === undefined ? null : dispatchDelayOf(admin, declaring),
  ]);
  const { limits, rate, inFlight, pausedUntil } = figures;
  return {
    throttle: name,
    key: bucket === UNKEYED_BUCKET ? [] : bucket === MISSING_KEY_BUCKET ? null : [...(key ?? [])],
    limits,
    limitSource: override ? 'override' : 'declared',
    adaptive,
    effective: effectiveRate(inForce.limits, inForce.rate, concurrencyOf(throttle, dispatchDelay)),
    bindingNow: pausedUntil !== undefined ? 'paused' : bindingNow(limits, rate, inFlight),
    rate,
    inFlight,
    paused: pausedUntil === undefined ? null : { until: pausedUntil },
    waiting: figures.waiting,
    nextRoomAt: nextRoomAt(limits, rate, pausedUntil, figures.nowMs),
    at: figures.nowMs,
  };
}

/** Processor start minus processedOn, and processing times, over the live workers of these entries. */
export function dispatchDelayOf(admin: AdminContext, declaring: readonly RegistryEntry[]): Promise<DispatchDelayStats | null> {
  return readDispatchDelay(admin.connections.client, declaring.map((entry) => ({ key: admin.registry.queueKeysOf(entry).dispatchDelays, workerId: entry.workerId })));
}

/** A throttle's concurrency with the processing time its workers measured, for effectiveRate. */
function concurrencyOf(throttle: EffectiveThrottle, delay: DispatchDelayStats | null): { n: number; processingMs: number | null } | undefined {
  return throttle.maxInFlight === undefined ? undefined : { n: throttle.maxInFlight, processingMs: delay?.processingMs ?? null };
}
