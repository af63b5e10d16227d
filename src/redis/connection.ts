import IORedis, { Cluster, Redis, RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;

/**
 * An ioredis client the caller owns: a Redis or a Cluster of ioredis 5 or 6. It is named by the members
 * this package relies on rather than as ioredis's classes, because the app's client may come from another
 * copy or major version of ioredis than the one these declarations resolve (ioredis is a peer, and bullmq 5
 * brings its own ioredis 5): nominally typed, such a client would not fit.
 */
export interface IORedisClient {
  readonly status: string;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number; readOnly?: boolean }): void;
  duplicate(): IORedisClient;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** What every class takes as `connection`: ioredis options, a redis:// URL, or a client the caller owns. */
export type ConnectionInput = RedisOptions | string | IORedisClient;

function isClient(input: ConnectionInput): input is IORedisClient {
  return typeof input === 'object' && input !== null && typeof (input as IORedisClient).defineCommand === 'function';
}

/** A client and whether we made it (and so must close it). */
export interface OwnedClient {
  client: RedisClient;
  owned: boolean;
}

export function openClient(input: ConnectionInput, extra: RedisOptions = {}): OwnedClient {
  // ioredis 5 and 6 answer the commands this package sends alike: a client of either is used as ours.
  if (isClient(input)) return { client: input as unknown as RedisClient, owned: false };
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
