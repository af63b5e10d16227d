import { EffectiveThrottle } from '../declarations/mergeDeclarations';
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
  /** How long the queue's state outlives its last refresh. */
  stateTtlMs: number;
}

/**
 * Publishes each throttle's effective limits and, given a config, the queue's throttle set and generation
 * (lua/publishQueueConfig-n.lua), unless the queue's config came from a newer registry version.
 */
export async function publishQueueConfig(
  runner: ScriptRunner, keys: ThrottleKeys, queueKeys: QueueThrottleKeys, markerKey: string, publication: Publication,
): Promise<PublishOutcome> {
  const { config, version, force, throttles, stateTtlMs } = publication;
  const scriptKeys = [queueKeys.state, markerKey, ...throttles.map((t) => keys.effectiveLimits(t.name))];
  const args: (string | number)[] = [
    config?.gen ?? '',
    config ? JSON.stringify(config.throttles.map((t) => ({ name: t.name, limits: t.limits, keyParts: t.keyParts, missing: t.missing, declarations: t.declarations }))) : '',
    config?.luaSpec ?? '',
    stateTtlMs,
    version,
    force ? '1' : '',
  ];
  for (const throttle of throttles) {
    args.push(throttle.limits.length);
    for (const limit of throttle.limits) args.push(limit.windowMs, limit.max);
  }
  const reply = Number(await runner.run('publishQueueConfig', scriptKeys, args));
  return reply === 1 ? 'changed' : reply === -1 ? 'stale' : 'unchanged';
}
