import { Redis, RedisOptions } from 'ioredis';

/**
 * An ioredis client that finds the master through the sentinels, as BullMQ wants it (`maxRetriesPerRequest: null`).
 * ioredis's `failoverDetector` is left to `overrides` (off by default, as in ioredis): without it the client
 * stays on the old master until that one drops it, which is part of what a Sentinel fault test may want to see.
 */
export function newSentinelClient(setup: { sentinels: { host: string; port: number }[]; name: string }, overrides: RedisOptions = {}): Redis {
  const client = new Redis({ sentinels: setup.sentinels, name: setup.name, maxRetriesPerRequest: null, ...overrides });
  client.on('error', () => undefined);
  return client;
}
