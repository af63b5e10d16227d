import { EffectiveThrottle, longestSpanMs } from '../declarations/mergeDeclarations';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { QueueConfig } from './queueConfig';

/** 'stale': the queue's config came from a newer registry version than the one given, and nothing was written. */
export type PublishOutcome = 'changed' | 'unchanged' | 'stale';

export interface Publication {
  /** The queue's config; undefined to publish only the throttles' limits (no live worker of the queue is left). */
  config: QueueConfig | undefined;
  /** The registry version the config was worked out from. */
  version: number;
  /** Write even from an older version (the registry's version went back: its keys were lost). */
  force: boolean;
  throttles: readonly EffectiveThrottle[];
  /** How long the throttles' published limits outlive their last refresh. */
  stateTtlMs: number;
  /** The publishing worker, kept in the queue's live workers for `ttlMs` (0: it is leaving). */
  worker: { id: string; ttlMs: number };
}

/** Where a queue's config and its throttles' limits go: two slots, possibly two Redis servers. */
export interface PublishTargets {
  /** Runs on the Redis holding the queue. */
  queue: ScriptRunner;
  /** Runs on the Redis holding the throttle namespace (the same runner when they share a server). */
  throttles: ScriptRunner;
  keys: ThrottleKeys;
  queueKeys: QueueThrottleKeys;
  markerKey: string;
}

/**
 * Publishes, given a config, the queue's throttle set and generation (lua/publishQueueConfig-n.lua, in the
 * queue's slot) unless the queue's config came from a newer registry version, then each throttle's
 * effective limits (lua/publishLimits-n.lua, in the namespace's slot). A delivery between the two sees
 * the new throttle set with the limits of before: each limit applies from the grant after it is written.
 */
export async function publishQueueConfig(targets: PublishTargets, publication: Publication): Promise<PublishOutcome> {
  const { config, version, force, throttles, stateTtlMs, worker } = publication;
  const { queueKeys: q } = targets;
  const configured = config?.throttles ?? [];
  const reply = Number(await targets.queue.run('publishQueueConfig',
    [q.state, targets.markerKey, q.workers, ...configured.map((t) => q.throttleStats(t.name).stats)],
    [
      config?.gen ?? '',
      config ? JSON.stringify(config.throttles.map((t) => ({ name: t.name, limits: t.limits, keyParts: t.keyParts, missing: t.missing, declarations: t.declarations }))) : '',
      config?.luaSpec ?? '',
      version,
      force ? '1' : '',
      worker.id,
      worker.ttlMs,
      ...configured.map(longestSpanMs),
    ]));
  if (reply === -1) return 'stale';
  if (throttles.length > 0) {
    const args: (string | number)[] = [stateTtlMs, version, force ? '1' : ''];
    for (const throttle of throttles) {
      const rate = throttle.tokenRate;
      const inFlight = throttle.maxInFlight;
      args.push(throttle.limits.length + (rate ? 2 : 0) + (inFlight !== undefined ? 1 : 0));
      for (const limit of throttle.limits) args.push(limit.windowMs, limit.max);
      if (rate) args.push('r', `${rate.n} ${rate.perMs} ${rate.burst}`, 'rh', throttle.rateLeaseMs);
      if (inFlight !== undefined) args.push('c', inFlight);
    }
    await targets.throttles.run('publishLimits', throttles.map((t) => targets.keys.effectiveLimits(t.name)), args);
  }
  return reply === 1 ? 'changed' : 'unchanged';
}
