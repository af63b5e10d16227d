import type { Redis } from 'ioredis';

/** Every key that starts with `prefix`, by SCAN (never KEYS), so it is safe on a shared Redis. */
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

/** Deletes every key that starts with `prefix`; resolves to how many there were. */
export async function deleteKeysUnder(redis: Redis, prefix: string): Promise<number> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  return keys.length;
}
