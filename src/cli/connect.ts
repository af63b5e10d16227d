import IORedis, { Cluster, RedisOptions } from 'ioredis';
import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { clusterSeedsOf } from '../redis/clusterSeeds';
import { RedisClient } from '../redis/connection';
import { RedisUnreachableError, UsageError } from './errors';
import { checkRedisUrl, GlobalOptions, redactUrl, splitRedisUrls } from './options';

/** A ThrottleAdmin on a client that fails fast when Redis is down, and how to close both. */
export interface CliSession {
  admin: ThrottleAdmin;
  client: RedisClient;
  /** The Redis URL(s) without passwords, for messages. */
  redisUrl: string;
  /** Whether the client is a Redis Cluster client. */
  cluster: boolean;
  close(): Promise<void>;
}

export type SessionOptions = Pick<GlobalOptions, 'prefix' | 'throttlePrefix' | 'cluster' | 'grantorRedis'> & { redis: string[] | string };

/** Fail fast: no retries, a 2 s connect timeout, so that a Redis that is down is one error at once rather than a hang. */
const FAIL_FAST: RedisOptions = { maxRetriesPerRequest: 1, connectTimeout: 2000 };

/** The socket's error says why a connect failed better than ioredis's 'Connection is closed.' */
function tracking(client: RedisClient): () => Error | undefined {
  let last: Error | undefined;
  // Errors reach the caller through the command that failed; without a listener ioredis would print them.
  client.on('error', (error: Error) => { last = error; });
  // A Cluster's error event wraps the node's; its lastNodeError is the node's own.
  return () => (last as { lastNodeError?: Error } | undefined)?.lastNodeError ?? last;
}

async function connectStandalone(url: string): Promise<{ client: IORedis; lastError: () => Error | undefined }> {
  const client = new IORedis(url, { ...FAIL_FAST, lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: false });
  const lastError = tracking(client);
  await client.connect().catch((error: Error) => {
    client.disconnect();
    throw new RedisUnreachableError(`cannot reach Redis at ${redactUrl(url)}: ${messageOf(lastError() ?? error)}`);
  });
  return { client, lastError };
}

/** Whether the server is a node of a Redis Cluster (INFO cluster); false where INFO is refused. */
async function isClusterNode(client: IORedis): Promise<boolean> {
  try {
    return /^cluster_enabled:1\b/m.test(String(await client.info('cluster')));
  } catch {
    // Denied by the ACL: commands then meet MOVED, which describeError explains, naming --cluster.
    return false;
  }
}

async function connectCluster(urls: string[], shown: string): Promise<Cluster> {
  const { startupNodes, redisOptions } = clusterSeedsOf(urls);
  const client = new Cluster(startupNodes, {
    lazyConnect: true,
    // Once the slot table is read, commands go straight to their node; a cluster that is down fails at once.
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: 2000,
    // Node connections open on first use and need their offline queue for the command that opens them.
    redisOptions: { ...FAIL_FAST, ...redisOptions },
  });
  const lastError = tracking(client);
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    const why = messageOf(lastError() ?? (error as Error));
    if (/cluster support disabled/i.test(why)) {
      throw new UsageError(`${shown} is not a Redis Cluster node (cluster support disabled): run without --cluster, with one --redis.`);
    }
    throw new RedisUnreachableError(`cannot reach the Redis Cluster at ${shown}: ${why}`);
  }
  return client;
}

function messageOf(error: Error): string {
  return error.message || String(error);
}

/**
 * The CLI's own client. A Redis Cluster is found out by itself, so that pointing the CLI at any node of a
 * cluster just works (rather than failing on the first MOVED): with several --redis seeds, or --cluster,
 * it connects as a Cluster client; with one, it connects to it and asks `INFO cluster`, and reconnects as a
 * Cluster client when the server is a cluster node. The admin never closes a client it was given.
 */
export async function openSession(options: SessionOptions): Promise<CliSession> {
  const urls = typeof options.redis === 'string' ? splitRedisUrls(options.redis) : options.redis;
  if (urls.length === 0) throw new UsageError('--redis needs a redis:// URL (or several, for the seed nodes of a Redis Cluster).');
  for (const url of urls) checkRedisUrl(url);
  const redisUrl = urls.map(redactUrl).join(',');
  let client: RedisClient;
  let cluster = options.cluster === true || urls.length > 1;
  if (cluster) {
    client = await connectCluster(urls, redisUrl);
  } else {
    const standalone = await connectStandalone(urls[0]);
    cluster = await isClusterNode(standalone.client);
    if (cluster) {
      standalone.client.disconnect();
      client = await connectCluster(urls, redisUrl);
    } else {
      client = standalone.client;
    }
  }
  const admin = new ThrottleAdmin({
    connection: client, prefix: options.prefix, throttlePrefix: options.throttlePrefix,
    ...(options.grantorRedis ? { grantor: { connection: options.grantorRedis } } : {}),
  });
  let closed = false;
  return {
    admin,
    client,
    redisUrl,
    cluster,
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
export async function withSession<T>(options: SessionOptions, fn: (session: CliSession) => Promise<T>): Promise<T> {
  const session = await openSession(options);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}
