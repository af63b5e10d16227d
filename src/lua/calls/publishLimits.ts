import { ScriptRunner } from '../scripts';
import { flagArg, ScriptArg, sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/publishLimits-n.lua, in the namespace's slot: publishes each throttle's effective limits (replaced whole),
 * unless worked out from an older registry version than the throttle's.
 */
export const publishLimitsScript = variableKeysScript('publishLimits');

/** One throttle's effective limits, as its limits HASH holds them. */
export interface PublishedLimits {
  /** KEYS[i]: the throttle's limits key. */
  readonly limitsKey: string;
  /** Window limits: field window ms -> N. */
  readonly windows: readonly { readonly windowMs: number; readonly max: number }[];
  /** A rate: r -> "n perMs burst", and rh -> H, its longest lease (ms). */
  readonly rate?: { readonly n: number; readonly perMs: number; readonly burst: number; readonly leaseMs: number };
  /** A concurrency: c -> n. */
  readonly concurrency?: number;
}

export interface PublishLimitsInput {
  /** How long the limits outlive their last refresh (ms). */
  readonly ttlMs: number;
  /** The registry version they were worked out from. */
  readonly registryVersion: number;
  /** Publish even so (the registry's version went back). */
  readonly force: boolean;
  readonly throttles: readonly PublishedLimits[];
}

/** Resolves to the number of throttles whose limits were written. */
export function runPublishLimits(runner: ScriptRunner, input: PublishLimitsInput): Promise<number> {
  const args: ScriptArg[] = [input.ttlMs, input.registryVersion, flagArg(input.force)];
  for (const { windows, rate, concurrency } of input.throttles) {
    args.push(windows.length + (rate ? 2 : 0) + (concurrency !== undefined ? 1 : 0));
    for (const limit of windows) args.push(limit.windowMs, limit.max);
    if (rate) args.push('r', `${rate.n} ${rate.perMs} ${rate.burst}`, 'rh', rate.leaseMs);
    if (concurrency !== undefined) args.push('c', concurrency);
  }
  return sendCall(runner, variableCall(publishLimitsScript, input.throttles.map((t) => t.limitsKey), args)).then(Number);
}
