import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { adaptLimitInput, runAdaptLimit } from '../../lua/calls/adaptLimit';
import { ScriptRunner } from '../../lua/scripts';
import { QueueConfig } from '../../queueState/queueConfig';

/** A bucket's adaptive limit lowered by a 429 (before and after: its live value). */
export interface LoweredLimit {
  readonly name: string;
  readonly segment: string;
  readonly before: number;
  readonly after: number;
}

/**
 * Lowers the live limit of each of these buckets whose throttle is adaptive (lua/adaptLimit-2.lua, at most once a
 * period per bucket); resolves to the buckets lowered now.
 */
export async function lowerAdaptiveLimits(runner: ScriptRunner, keys: ThrottleKeys, config: QueueConfig,
  buckets: readonly { name: string; segment: string }[]): Promise<LoweredLimit[]> {
  const lowered: LoweredLimit[] = [];
  for (const { name, segment } of buckets) {
    if (!config.throttles.some((t) => t.name === name && t.adaptiveSpec)) continue;
    const reply = await runAdaptLimit(runner, adaptLimitInput(keys, name, segment, true));
    if (reply.adaptive && reply.changed) lowered.push({ name, segment, before: reply.before, after: reply.after });
  }
  return lowered;
}
