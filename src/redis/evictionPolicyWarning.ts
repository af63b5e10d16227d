import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import { isClusterClient, mastersOf, nodeAddress } from './clusterNodes';
import { RedisClient } from './connection';
import { docsUrl } from '../docs/docsLinks';

/** Redis servers already warned about, by host:port/db: once per process each, as bullmq warns once per connection. */
const warned = new Set<string>();

/**
 * Warns once when Redis may evict keys under memory pressure (`maxmemory-policy` other than `noeviction`):
 * held jobs live only in this package's keys and counters keep the limits, so an eviction loses jobs and can
 * let a bucket exceed its limit. Logs through the logger and, as bullmq does, on the console. Reads the
 * policy with CONFIG GET, or INFO memory where the ACL denies CONFIG; says nothing when both are denied.
 * Both are node-local and each master of a Cluster has its own setting, so a Cluster's every master is
 * asked, and each that may evict is named. Resolves to the policy found (on a Cluster, the first master's
 * that is not noeviction; undefined: unknown).
 */
export async function warnIfEvicting(client: RedisClient, logger: Logger): Promise<string | undefined> {
  let nodes: RedisClient[];
  try {
    nodes = await mastersOf(client);
  } catch {
    return undefined;
  }
  const policies = await Promise.all(nodes.map(async (node) => ({ node, policy: await evictionPolicy(node) })));
  for (const { node, policy } of policies) {
    if (policy === undefined || policy === 'noeviction') continue;
    warnOnce(isClusterClient(client) ? nodeAddress(node as Redis) : targetOf(client), policy, logger);
  }
  const known = policies.map((p) => p.policy).filter((p): p is string => p !== undefined);
  return known.find((p) => p !== 'noeviction') ?? known[0];
}

function warnOnce(target: string, policy: string, logger: Logger): void {
  if (warned.has(target)) return;
  warned.add(target);
  const message =
    `IMPORTANT! Redis at ${target} has maxmemory-policy '${policy}'. It should be "noeviction": when memory runs out Redis ` +
    `will delete keys, and jobs held by bullmq-throttle (and bullmq's own jobs) are lost, and throttle counters too, which ` +
    `lets a bucket exceed its limit. Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction); see ${docsUrl('redis.md')}.`;
  logger.warn({ redis: target, maxmemoryPolicy: policy }, message);
  console.warn(message);
}

async function evictionPolicy(client: RedisClient): Promise<string | undefined> {
  try {
    const reply = (await (client as unknown as { config(op: 'GET', name: string): Promise<string[]> }).config('GET', 'maxmemory-policy')) ?? [];
    if (reply.length >= 2) return String(reply[1]);
  } catch {
    // CONFIG is often denied to application users (and renamed on managed Redis): INFO has the policy too.
  }
  try {
    const info = String(await client.info('memory'));
    return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  } catch {
    return undefined;
  }
}

function targetOf(client: RedisClient): string {
  const options = (client as { options?: { host?: string; port?: number; path?: string; db?: number } }).options ?? {};
  const nodes = (client as { startupNodes?: { host?: string; port?: number }[] }).startupNodes;
  if (Array.isArray(nodes) && nodes.length > 0) return nodes.map((n) => `${n.host ?? 'localhost'}:${n.port ?? 6379}`).join(',');
  return options.path ?? `${options.host ?? 'localhost'}:${options.port ?? 6379}/${options.db ?? 0}`;
}

/** Tests only: forget which servers were warned about. */
export function forgetEvictionWarnings(): void {
  warned.clear();
}
