import { LimitSpec, unknownKind } from '../../declarations/LimitSpec';
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
  /** Each limit (LimitSpec's limitsOf: windows shortest first, then the rate, then the concurrency). */
  readonly limits: readonly LimitSpec[];
  /** H, the rate's longest lease (ms; rateLeaseMs), written beside a rate. */
  readonly rateLeaseMs: number;
  /** Field a, when a limit adapts (src/declarations/Adaptive.ts' adaptiveField). */
  readonly adaptive?: string;
}

/**
 * The fields of the limits hash one limit writes: a window, window ms -> N; a rate, r -> "n perMs burst" and
 * rh -> H; a concurrency, c -> n. In Lua each kind reads its own back (its readField, lua/includes/bucketCounters.lua).
 */
function limitFields(limit: LimitSpec, rateLeaseMs: number): ScriptArg[] {
  switch (limit.kind) {
    case 'window': return [limit.windowMs, limit.max];
    case 'rate': return ['r', `${limit.rate.n} ${limit.rate.perMs} ${limit.rate.burst}`, 'rh', rateLeaseMs];
    case 'concurrency': return ['c', limit.n];
    default: return unknownKind(limit);
  }
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
  for (const { limits, rateLeaseMs, adaptive } of input.throttles) {
    const fields = limits.flatMap((limit) => limitFields(limit, rateLeaseMs));
    if (adaptive) fields.push('a', adaptive);
    // The number of field pairs, then the pairs.
    args.push(fields.length / 2, ...fields);
  }
  return sendCall(runner, variableCall(publishLimitsScript, input.throttles.map((t) => t.limitsKey), args)).then(Number);
}
