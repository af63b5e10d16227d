import { ScriptRunner } from '../lua/scripts';
import { runRedisTime } from '../lua/calls/redisTime';
import { isClusterClient } from './clusterNodes';
import { RedisClient } from './connection';

/**
 * Redis time (ms) on the node that holds `key`, for comparing with times the scripts wrote to keys of that
 * slot on that node's clock. On a single Redis that is TIME; in a Cluster a keyless TIME goes to any node,
 * so a tiny script (lua/redisTime-1.lua) carries the key and is routed to the slot's master.
 */
export async function redisTimeMs(client: RedisClient, key: string, runner?: ScriptRunner): Promise<number> {
  if (!isClusterClient(client)) {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }
  const us = await runRedisTime(runner ?? new ScriptRunner(client), { slot: key });
  return Math.floor(us / 1000);
}
