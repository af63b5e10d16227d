import { ScriptRunner } from '../scripts';
import { flagArg, ScriptArg, sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/publishQueueConfig-n.lua, on the queue: publishes its throttle set with its config generation, and keeps the
 * calling worker in the queue's live workers; refused whole when worked out from an older registry version.
 */
export const publishQueueConfigScript = variableKeysScript('publishQueueConfig');

export enum PublishQueueConfigReply {
  /** The queue's generation changed. */
  Changed = 1,
  Unchanged = 0,
  /** Refused: the queue's config came from a newer registry version. */
  Refused = -1,
}

export interface PublishQueueConfigInput {
  /** KEYS[1..3]: the queue's state (HASH), its marker (a new generation wakes its workers), its workers (ZSET). */
  readonly state: string;
  readonly marker: string;
  readonly workers: string;
  /** The generation ('' leaves the queue's config as it is), the config JSON and the Lua classification spec ('' when none). */
  readonly gen: string;
  readonly configJson: string;
  readonly luaSpec: string;
  /** The registry version the config was worked out from. */
  readonly registryVersion: number;
  /** Publish even so (the registry's version went back: its keys were lost or deleted). */
  readonly force: boolean;
  /** The publishing worker, kept in the queue's workers for ttlMs (0 withdraws it). */
  readonly workerId: string;
  readonly workerTtlMs: number;
  /** The throttles' longest waits, "<encoded name>=<ms>,..." ('' when none declares maxWait): the state's mw. */
  readonly maxWaits: string;
  /** Whether the queue's workers declare a fairness key: the state's field fair. */
  readonly fairness: boolean;
  /** Per throttle of the config: the queue's statistics HASH of it (KEYS[4..]) and its longest window (ms). */
  readonly throttles: readonly { readonly stats: string; readonly longestMs: number }[];
}

export function runPublishQueueConfig(runner: ScriptRunner, input: PublishQueueConfigInput): Promise<PublishQueueConfigReply> {
  const keys = [input.state, input.marker, input.workers, ...input.throttles.map((t) => t.stats)];
  const args: ScriptArg[] = [
    input.gen, input.configJson, input.luaSpec, input.registryVersion, flagArg(input.force), input.workerId, input.workerTtlMs,
    input.maxWaits, input.fairness ? '1' : '', ...input.throttles.map((t) => t.longestMs),
  ];
  return sendCall(runner, variableCall(publishQueueConfigScript, keys, args)).then(Number);
}
