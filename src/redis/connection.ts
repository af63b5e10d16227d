import IORedis, { Cluster, Redis, RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;
/** What every class takes as `connection`: ioredis options, a redis:// URL, or a client the caller owns. */
export type ConnectionInput = RedisOptions | string | RedisClient;

function isClient(input: ConnectionInput): input is RedisClient {
  return typeof input === 'object' && input !== null && typeof (input as RedisClient).defineCommand === 'function';
}

/** A client and whether we made it (and so must close it). */
export interface OwnedClient {
  client: RedisClient;
  owned: boolean;
}

export function openClient(input: ConnectionInput, extra: RedisOptions = {}): OwnedClient {
  if (isClient(input)) return { client: input, owned: false };
  const client = typeof input === 'string' ? new IORedis(input, extra) : new IORedis({ ...input, ...extra });
  return { client, owned: true };
}

export async function closeClient({ client, owned }: OwnedClient): Promise<void> {
  if (!owned) return;
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
