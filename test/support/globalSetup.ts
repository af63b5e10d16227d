import { startTestRedis } from './testRedis';

export default async function globalSetup(): Promise<void> {
  const redis = await startTestRedis();
  process.env.BULLMQ_THROTTLE_TEST_REDIS_URL = redis.url;
  (globalThis as { __testRedis?: typeof redis }).__testRedis = redis;
  process.stderr.write(`\ntests use Redis at ${redis.url} (${redis.source})\n`);
}
