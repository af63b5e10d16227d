import { LocalRedisServer, startLocalRedisServer } from '../devRedis/localRedisServer';

/** REDIS_URL when set, else a redis-server from PATH on a free port (stopped by the caller). */
export async function demoRedis(): Promise<{ url: string; server?: LocalRedisServer }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL };
  const server = await startLocalRedisServer();
  return { url: server.url, server };
}
