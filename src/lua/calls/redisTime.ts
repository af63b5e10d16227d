import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/redisTime-1.lua: the clock of the Redis node that holds a key (in Redis Cluster a keyless TIME goes to any
 * node, while a script goes to the master of its key's slot).
 */
export const redisTimeScript = fixedKeysScript('redisTime', ['slot']);

export interface RedisTimeInput {
  /** KEYS[1]: any key of the slot whose clock is wanted (not read). */
  readonly slot: string;
}

/** Resolves to the node's time in microseconds. */
export function runRedisTime(runner: ScriptRunner, input: RedisTimeInput): Promise<number> {
  return sendCall(runner, fixedCall(redisTimeScript, { slot: input.slot }, [])).then(Number);
}
