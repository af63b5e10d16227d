import { KeyValue } from '../declarations/Key';
import { UNTIL_RESUMED } from '../lua/calls/pauseThrottle';
import { EVERY_PAUSE } from '../lua/calls/resumeThrottle';
import { EVERY_OVERRIDE, WHOLE_THROTTLE_OVERRIDE } from '../lua/calls/setLimitOverride';
import { EVERY_BUCKET, runWakeBuckets } from '../lua/calls/wakeBuckets';
import { entriesDeclaring } from '../queueState/queueConfig';
import type { RegistryEntry } from '../queueState/registryEntry';
import { liftPause, PauseOptions, pauseUntilMs, setPause } from '../queueState/throttlePauses';
import { AdminContext } from './adminContext';
import { bucketSegmentOf } from './bucketSegment';
import { checkedLimits, LimitInput, SetLimitsOptions, ttlOf, writeOverride } from './limitOverrides';

/** Pauses a throttle or one bucket of it (ThrottleAdmin.pause); resolves to when the pause in force ends (null: until resumed). */
export async function pauseThrottle(admin: AdminContext, name: string, options: PauseOptions): Promise<{ until: number | null }> {
  const now = await admin.connections.nowMs();
  const segment = bucketSegmentOf(name, admin.registry.declared(name, await admin.registry.liveEntries(now)), options.key);
  const until = await setPause(admin.connections.nsRunner, admin.keys, name, segment, pauseUntilMs(options, now));
  return { until: until === UNTIL_RESUMED ? null : until };
}

/** Lifts every pause of a throttle, or one bucket's own (ThrottleAdmin.resume); resolves to how many were lifted. */
export async function resumeThrottle(admin: AdminContext, name: string, options: { key?: readonly KeyValue[] | null }): Promise<number> {
  const entries = await admin.registry.liveEntries(await admin.connections.nowMs());
  const segment = options.key === undefined ? EVERY_PAUSE : bucketSegmentOf(name, admin.registry.declared(name, entries), options.key);
  const targets = admin.registry.queuesOf(entriesDeclaring(entries, name)).map((q) => ({ wakeups: q.wakeups, leaseRoom: q.leaseRoom, marker: q.marker }));
  return liftPause(admin.connections.nsRunner, admin.connections.runner, admin.keys, name, segment, targets);
}

/** Replaces the declared window limits of a throttle or one bucket (ThrottleAdmin.setLimits). */
export async function setThrottleLimits(admin: AdminContext, name: string, limits: readonly LimitInput[], options: SetLimitsOptions): Promise<void> {
  const checked = checkedLimits(name, limits);
  const ttlMs = ttlOf(name, options.ttlMs);
  const entries = await admin.registry.liveEntries();
  const segment = bucketSegmentOf(name, admin.registry.declared(name, entries), options.key);
  await writeOverride(admin.connections.nsRunner, admin.keys, name, segment, checked, ttlMs);
  await wakeDeclaring(admin, name, segment, entries);
}

/** Goes back to the declared limits of a throttle and its buckets, or of one bucket (ThrottleAdmin.clearLimits). */
export async function clearThrottleLimits(admin: AdminContext, name: string, options: { key?: readonly KeyValue[] | null }): Promise<void> {
  const entries = await admin.registry.liveEntries();
  const segment = options.key === undefined ? EVERY_OVERRIDE : bucketSegmentOf(name, admin.registry.declared(name, entries), options.key);
  await writeOverride(admin.connections.nsRunner, admin.keys, name, segment, null);
  await wakeDeclaring(admin, name, segment, entries);
}

/**
 * Classes waiting on the throttle's buckets (`segment`: one; '': all) look again at once in every queue that
 * declares it: a raised limit has room now, which their wakeup time, set under the old one, does not know.
 */
async function wakeDeclaring(admin: AdminContext, name: string, segment: string, entries: readonly RegistryEntry[]): Promise<void> {
  for (const q of admin.registry.queuesOf(entriesDeclaring(entries, name))) {
    await runWakeBuckets(admin.connections.runner, { wakeups: q.wakeups, leaseRoom: q.leaseRoom, marker: q.marker, throttle: name, bucket: segment === WHOLE_THROTTLE_OVERRIDE ? EVERY_BUCKET : segment });
  }
}
