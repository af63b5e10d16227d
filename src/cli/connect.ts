import IORedis, { Redis } from 'ioredis';
import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { RedisUnreachableError } from './errors';
import { checkRedisUrl, GlobalOptions, redactUrl } from './options';

/** A ThrottleAdmin on a client that fails fast when Redis is down, and how to close both. */
export interface CliSession {
  admin: ThrottleAdmin;
  client: Redis;
  /** The Redis URL without its password, for messages. */
  redisUrl: string;
  close(): Promise<void>;
}

/**
 * The CLI's own client: no retries, no offline queue, a 2 s connect timeout, so that a Redis that is down
 * or unreachable is one error at once rather than a hang. The admin never closes a client it was given.
 */
export async function openSession(options: Pick<GlobalOptions, 'redis' | 'prefix'>): Promise<CliSession> {
  checkRedisUrl(options.redis);
  const redisUrl = redactUrl(options.redis);
  const client = new IORedis(options.redis, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    connectTimeout: 2000,
  });
  // Errors reach the caller through the command that failed; without a listener ioredis would print them.
  let lastError: Error | undefined;
  client.on('error', (error: Error) => { lastError = error; });
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    // connect() rejects with 'Connection is closed.' once it gives up; the socket's error says why.
    const why = lastError ?? (error as Error);
    throw new RedisUnreachableError(`cannot reach Redis at ${redisUrl}: ${why.message || String(why)}`);
  }
  const admin = new ThrottleAdmin({ connection: client, prefix: options.prefix });
  let closed = false;
  return {
    admin,
    client,
    redisUrl,
    async close() {
      if (closed) return;
      closed = true;
      await admin.close().catch(() => undefined);
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}

/** Runs `fn` with a session, closed afterwards whatever happened. */
export async function withSession<T>(options: Pick<GlobalOptions, 'redis' | 'prefix'>, fn: (session: CliSession) => Promise<T>): Promise<T> {
  const session = await openSession(options);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}
