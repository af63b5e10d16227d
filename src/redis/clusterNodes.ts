import type { Cluster, Redis } from 'ioredis';
import { RedisClient } from './connection';

/**
 * Whether the client is an ioredis Cluster. By ioredis's own `isCluster` flag, not `instanceof`: the
 * client may come from another copy of ioredis, or be bullmq 6's proxy of one (which keeps the flag).
 */
export function isClusterClient(client: unknown): client is Cluster {
  return typeof client === 'object' && client !== null && (client as { isCluster?: unknown }).isCluster === true;
}

/**
 * The connections that answer node-local commands (SCAN, CLIENT LIST, INFO, CONFIG GET) for the whole
 * deployment: the client itself on a single Redis; on a Cluster, one per master that serves slots, as the
 * client's slot table has them (replicas hold copies of their master's keys and see none of the clients
 * that write, so they are left out).
 */
export async function mastersOf(client: RedisClient): Promise<Redis[]> {
  if (!isClusterClient(client)) return [client];
  // Before the first command the slot table may still be empty: a PING waits for the cluster to be ready.
  if (client.status !== 'ready' || client.nodes('master').length === 0) await client.ping();
  return client.nodes('master');
}

/** host:port of one node's connection, for messages. */
export function nodeAddress(node: Redis): string {
  const { host, port, path } = node.options ?? {};
  return path ?? `${host ?? 'localhost'}:${port ?? 6379}`;
}
