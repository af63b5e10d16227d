import type { TestRedis } from './testRedis';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __testRedis?: TestRedis }).__testRedis?.stop();
}
