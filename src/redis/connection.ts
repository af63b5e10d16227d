import IORedis, { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';

/** An ioredis client of this package's ioredis: a single server or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * An ioredis client the caller owns: a Redis or a Cluster of ioredis 5 or 6. It is named by the members
 * this package relies on rather than as ioredis's classes, because the app's client may come from another
 * copy or major version of ioredis than the one these declarations resolve (ioredis is a peer, and bullmq 5
 * brings its own ioredis 5): nominally typed, such a client would not fit.
 */
export interface IORedisClient {
  /** ioredis's connection state: `'ready'` once connected, `'end'` once closed (`'wait'`, `'connecting'`, ...). */
  readonly status: string;
  /**
   * Registers a Lua script as a command of the client, as ioredis does: the package runs its scripts this
   * way. Having this method is also what tells a client from ioredis options in `connection`.
   * @param name The command's name on the client.
   * @param definition The script's source and its number of keys, as ioredis takes them.
   */
  defineCommand(name: string, definition: {
    /** The script's Lua source. */
    lua: string;
    /**
     * How many of each call's arguments are keys. Left out, each call gives that number first.
     * @default undefined (given by each call)
     */
    numberOfKeys?: number;
    /**
     * Whether ioredis treats the script as read-only: a Cluster client reading from replicas (scaleReads) may then
     * send it to one.
     * @default false
     */
    readOnly?: boolean;
  }): void;
  /**
   * A new connection with the same options, as ioredis makes it. The package closes the copies it makes
   * (a closing worker withdraws its declarations on one).
   */
  duplicate(): IORedisClient;
  /**
   * Closes the connection once pending replies arrive, as ioredis does. The package calls it only on
   * connections it opened itself, never on a client passed in.
   */
  quit(): Promise<unknown>;
  /** Closes the connection at once, as ioredis does: used when quit fails, only on connections the package opened. */
  disconnect(): void;
}

/**
 * A Redis Cluster to connect to: ioredis's `new Cluster(startupNodes, clusterOptions)`. Options for each
 * node's connection (password, TLS) go in `clusterOptions.redisOptions`, as ioredis has them.
 *
 * @example
 * ```ts
 * const admin = new ThrottleAdmin({
 *   connection: { startupNodes: [{ host: 'redis-0', port: 6379 }, { host: 'redis-1', port: 6379 }] },
 *   prefix: '{bull}',
 * });
 * ```
 */
export interface ClusterConnectionOptions {
  /** Seed nodes (any reachable one will do): `{ host, port }`, a port, or a `redis://` URL. */
  startupNodes: ClusterNode[];
  /**
   * ioredis's Cluster options, passed on as they are; put each node's connection options (password, TLS) in
   * `clusterOptions.redisOptions`. The package sets at most `redisOptions.maxRetriesPerRequest` (to null) on top.
   * @default ioredis's own Cluster options
   * @example
   * ```ts
   * const connection = {
   *   startupNodes: [{ host: 'redis-0', port: 6379 }],
   *   clusterOptions: { redisOptions: { password: process.env.REDIS_PASSWORD, tls: {} } },
   * };
   * ```
   */
  clusterOptions?: ClusterOptions;
}

/** What every class takes as `connection`: ioredis options, a redis:// URL, a Cluster's seeds, or a client the caller owns. */
export type ConnectionInput = RedisOptions | string | ClusterConnectionOptions | IORedisClient;

function isClient(input: ConnectionInput): input is IORedisClient {
  return typeof input === 'object' && input !== null && typeof (input as IORedisClient).defineCommand === 'function';
}

function isClusterOptions(input: ConnectionInput): input is ClusterConnectionOptions {
  return typeof input === 'object' && input !== null && Array.isArray((input as ClusterConnectionOptions).startupNodes);
}

/** A client and whether we made it (and so must close it). */
export interface OwnedClient {
  client: RedisClient;
  owned: boolean;
}

/** `extra` is applied to the client made, or, for a Cluster, to every node's connection (`redisOptions`). */
export function openClient(input: ConnectionInput, extra: RedisOptions = {}): OwnedClient {
  // ioredis 5 and 6 answer the commands this package sends alike: a client of either is used as ours.
  if (isClient(input)) return { client: input as unknown as RedisClient, owned: false };
  if (isClusterOptions(input)) {
    const options = input.clusterOptions ?? {};
    return { client: new Cluster(input.startupNodes, { ...options, redisOptions: { ...options.redisOptions, ...extra } }), owned: true };
  }
  const client = typeof input === 'string' ? new IORedis(input, extra) : new IORedis({ ...(input as RedisOptions), ...extra });
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
