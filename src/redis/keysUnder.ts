import type { Redis } from 'ioredis';
import { isClusterClient, mastersOf } from './clusterNodes';
import { RedisClient } from './connection';

/** One node's keys that start with `prefix`, by SCAN (never KEYS), so it is safe on a shared Redis. */
async function scanNode(node: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/**
 * Every key that starts with `prefix`. SCAN is node-local: in a Cluster every master is scanned (each holds
 * the keys of its own slots; replicas hold copies), so the keys of a prefix spread over slots are all found.
 */
export async function keysUnder(redis: RedisClient, prefix: string): Promise<string[]> {
  const nodes = await mastersOf(redis);
  const perNode = await Promise.all(nodes.map((node) => scanNode(node, prefix)));
  return [...new Set(perNode.flat())];
}

/** Deletes every key that starts with `prefix`; resolves to how many there were. */
export async function deleteKeysUnder(redis: RedisClient, prefix: string): Promise<number> {
  const keys = await keysUnder(redis, prefix);
  if (isClusterClient(redis)) {
    // A DEL of several keys must not span slots (CROSSSLOT): one key per DEL, routed by the Cluster client.
    for (let i = 0; i < keys.length; i += 500) await Promise.all(keys.slice(i, i + 500).map((key) => redis.del(key)));
  } else {
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  }
  return keys.length;
}
