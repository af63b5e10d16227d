import { Cluster, ClusterOptions } from 'ioredis';

/**
 * An ioredis Cluster client as BullMQ wants it: `maxRetriesPerRequest: null` inside `redisOptions` (bullmq
 * throws otherwise for a Worker's blocking connection), the offline queue on (the default, which bullmq needs), and
 * no `keyPrefix` (bullmq refuses it: use bullmq's `prefix`). The rest are ioredis defaults, so that tests see what a
 * user's client does during a failover (CLUSTERDOWN and MOVED retried every 100 ms, at most 16 redirections);
 * pass `overrides` to change them. Close it with `quit()` or `disconnect()`.
 */
export function newClusterClient(seeds: { host: string; port: number }[], overrides: ClusterOptions = {}): Cluster {
  const client = new Cluster(seeds, {
    ...overrides,
    redisOptions: { maxRetriesPerRequest: null, ...overrides.redisOptions },
  });
  // A refused connection to a killed node is an 'error' event; without a listener ioredis prints it as unhandled.
  client.on('error', () => undefined);
  return client;
}
