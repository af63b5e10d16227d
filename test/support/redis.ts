import IORedis, { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { testRedisUrl } from './testRedis';

export function newRedis(): Redis {
  return new IORedis(testRedisUrl(), { maxRetriesPerRequest: null });
}

/** A prefix no other test uses, so that each test only ever sees and deletes its own keys. */
export function uniquePrefix(label: string): string {
  return `test-${label}-${randomBytes(4).toString('hex')}`;
}

export { keysUnder, deleteKeysUnder } from '../../src/redis/keysUnder';

/** A window counter's token count as its header stores it (lua/includes/windowCounter.lua), or null without a key. */
export async function storedTokens(redis: Redis, counterKey: string): Promise<string | null> {
  const header = await redis.hget(counterKey, 'h');
  return header === null ? null : header.split(' ')[0];
}
