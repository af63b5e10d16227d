import type { Redis } from 'ioredis';
import { infoField } from '../machine';
import { keysUnder } from './keys';

export interface Footprint {
  keys: number;
  /** Hash fields summed over the keys, n/lo/hi included. */
  fields: number;
  /** MEMORY USAGE (SAMPLES 0: exact) summed over the keys. */
  bytes: number;
  /** Tokens counted: the `n` fields summed. */
  counted: number;
  /** OBJECT ENCODING of the keys (listpack, hashtable), distinct values joined. */
  encoding: string;
}

/** What the keys starting with `prefix` take in Redis. */
export async function footprint(redis: Redis, prefix: string): Promise<Footprint> {
  const keys = await keysUnder(redis, prefix);
  const result: Footprint = { keys: keys.length, fields: 0, bytes: 0, counted: 0, encoding: '' };
  const encodings = new Set<string>();
  for (let i = 0; i < keys.length; i += 500) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(i, i + 500)) {
      pipeline.hlen(key);
      pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      pipeline.hget(key, 'n');
      pipeline.call('OBJECT', 'ENCODING', key);
    }
    const replies = (await pipeline.exec()) ?? [];
    for (let j = 0; j < replies.length; j += 4) {
      const [fields, bytes, counted, encoding] = replies.slice(j, j + 4).map(([error, value]) => {
        if (error) throw error;
        return value;
      });
      result.fields += Number(fields);
      result.bytes += Number(bytes);
      result.counted += Number(counted ?? 0);
      encodings.add(String(encoding));
    }
  }
  result.encoding = [...encodings].join('/');
  return result;
}

/** INFO memory used_memory, in bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  return Number(infoField(await redis.info('memory'), 'used_memory'));
}
