import type { TestRedis } from './startTestRedis';

export default async function globalTeardown(): Promise<void> {
  await Promise.all((globalThis as { __testRedis?: TestRedis[] }).__testRedis?.map((redis) => redis.stop()) ?? []);
}
