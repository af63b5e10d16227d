import type { RedisOptions } from 'ioredis';

/**
 * The seed nodes of a Redis Cluster from redis:// URLs, and the options every node's connection takes from
 * the first URL (username, password, TLS): ioredis takes seeds as host and port only.
 */
export function clusterSeedsOf(urls: readonly string[]): { startupNodes: { host: string; port: number }[]; redisOptions: RedisOptions } {
  const parsed = urls.map((url) => new URL(url));
  const first = parsed[0];
  return {
    startupNodes: parsed.map((url) => ({ host: url.hostname, port: Number(url.port || 6379) })),
    redisOptions: first === undefined ? {} : {
      ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  };
}
