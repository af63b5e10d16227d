import { startLocalRedisServer } from '../../src/devRedis/localRedisServer';

export interface BenchRedis {
  url: string;
  source: 'REDIS_URL' | 'redis-server';
  stop(): Promise<void>;
}

/** REDIS_URL when set (left running); else a private redis-server, stopped by stop(). */
export async function openBenchRedis(): Promise<BenchRedis> {
  if (process.env.REDIS_URL) {
    return { url: process.env.REDIS_URL, source: 'REDIS_URL', stop: async () => undefined };
  }
  const server = await startLocalRedisServer();
  return { url: server.url, source: 'redis-server', stop: () => server.stop() };
}
