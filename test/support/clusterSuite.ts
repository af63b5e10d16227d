import { Cluster } from 'ioredis';
import { newClusterClient } from './clusterClient';
import { RedisCluster, RedisClusterOptions, startRedisCluster } from './redisCluster';

/** A test file's own Redis Cluster and a client of it, started before its tests and stopped after them. */
export interface ClusterSuite {
  readonly cluster: RedisCluster;
  readonly client: Cluster;
}

/** Registers beforeAll/afterAll for one cluster per test file; read `cluster` and `client` inside tests. */
export function useRedisCluster(options: RedisClusterOptions = {}): ClusterSuite {
  let cluster: RedisCluster | undefined;
  let client: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster(options);
    client = newClusterClient(cluster.seeds);
  }, 120_000);
  afterAll(async () => {
    await client?.quit().catch(() => client?.disconnect());
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (!cluster) throw new Error('the cluster is started in beforeAll: use it inside tests');
      return cluster;
    },
    get client() {
      if (!client) throw new Error('the cluster is started in beforeAll: use it inside tests');
      return client;
    },
  };
}
