import type { Config } from 'jest';
import { startTestRedis, TestRedis } from './startTestRedis';

/** One Redis per jest worker (see testRedisUrl); with REDIS_URL set, every worker shares that one. */
export default async function globalSetup(globalConfig: Config): Promise<void> {
  const workers = process.env.REDIS_URL ? 1 : Math.max(1, Number(globalConfig.maxWorkers ?? 1));
  const servers = await Promise.all(Array.from({ length: workers }, () => startTestRedis()));
  process.env.BULLMQ_THROTTLE_TEST_REDIS_URLS = servers.map((redis) => redis.url).join(' ');
  (globalThis as { __testRedis?: TestRedis[] }).__testRedis = servers;
  process.stderr.write(`\ntests use ${servers.length === 1 ? 'Redis' : `${servers.length} Redis servers, one per jest worker,`} at ${servers.map((redis) => redis.url).join(', ')} (${servers[0].source})\n`);
}
