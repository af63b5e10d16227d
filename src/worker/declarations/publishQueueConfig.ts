import { limitsOf } from '../../declarations/LimitSpec';
import { EffectiveThrottle, longestSpanMs } from '../../declarations/mergeDeclarations';
import { QueueThrottleKeys, ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { runPublishLimits } from '../../lua/calls/publishLimits';
import { adaptiveField, publishedAdaptive } from '../../declarations/Adaptive';
import { encodeSegment } from '../../keys/keyEncoding';
import { PublishQueueConfigReply, runPublishQueueConfig } from '../../lua/calls/publishQueueConfig';
import { QueueConfig } from '../../queueState/queueConfig';

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
  const reply = await runPublishQueueConfig(targets.queue, {
    state: q.state, marker: targets.markerKey, workers: q.workers,
    gen: config?.gen ?? '',
    configJson: config ? JSON.stringify(config.throttles.map((t) => ({ name: t.name, limits: t.limits, keyParts: t.keyParts, missing: t.missing, declarations: t.declarations }))) : '',
    luaSpec: config?.luaSpec ?? '',
    registryVersion: version,
    force,
    workerId: worker.id,
    workerTtlMs: worker.ttlMs,
    fairness: Boolean(config?.fairness),
    maxWaits: configured.filter((t) => t.maxWaitMs !== undefined).map((t) => `${encodeSegment(t.name)}=${t.maxWaitMs}`).join(','),
    throttles: configured.map((t) => ({ stats: q.throttleStats(t.name).stats, longestMs: longestSpanMs(t) })),
  });
  if (reply === PublishQueueConfigReply.Refused) return 'stale';
  if (throttles.length > 0) {
    await runPublishLimits(targets.throttles, {
      ttlMs: stateTtlMs, registryVersion: version, force,
      throttles: throttles.map((throttle) => {
        const adaptive = throttle.adaptiveSpec && publishedAdaptive(throttle.adaptiveSpec, throttle.limits, throttle.tokenRate);
        return {
          limitsKey: targets.keys.effectiveLimits(throttle.name), limits: limitsOf(throttle), rateLeaseMs: throttle.rateLeaseMs,
          ...(adaptive ? { adaptive: adaptiveField(adaptive) } : {}),
        };
      }),
    });
  }
  return reply === PublishQueueConfigReply.Changed ? 'changed' : 'unchanged';
}
