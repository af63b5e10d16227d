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

export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

export async function deleteKeysUnder(redis: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}
