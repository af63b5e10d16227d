import calculateSlot from 'cluster-key-slot';
import IORedis, { Cluster, ClusterOptions } from 'ioredis';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { newClusterClient } from '../../test/support/clusterClient';
import { servesSlot } from '../../test/support/clusterNodes';
import { RedisCluster, RedisClusterNode, startRedisCluster } from '../../test/support/redisCluster';

/**
 * A 3-master, 3-replica Redis Cluster of redis-server processes started for one benchmark (the tests'
 * harness, test/support/redisCluster.ts), with one admin connection per master for INFO and FLUSHALL
 * (this cluster is the benchmark's own: flushing it between cases keeps them independent).
 */
export class BenchCluster {
  private readonly clients: Cluster[] = [];
  /** Options for every Cluster client client() opens (ioredis defaults but for what newClusterClient sets). */
  clientOptions: ClusterOptions = {};

  private constructor(
    readonly cluster: RedisCluster,
    readonly masters: readonly RedisClusterNode[],
    /** One plain connection per master, same order as `masters`. */
    readonly masterConnections: readonly IORedis[],
    /** One per replica: they replay the masters' writes, which costs CPU on the same cores. */
    readonly replicaConnections: readonly IORedis[],
  ) {}

  static async start(): Promise<BenchCluster> {
    const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
    try {
      const nodes = await cluster.waitForStable();
      const masters = nodes.filter((node) => node.role === 'master').sort((a, b) => a.port - b.port);
      const connect = (node: RedisClusterNode) => new IORedis({ host: node.host, port: node.port, maxRetriesPerRequest: null });
      const replicas = nodes.filter((node) => node.role === 'replica');
      return new BenchCluster(cluster, masters, masters.map(connect), replicas.map(connect));
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** A new Cluster client (as BullMQ wants it), closed by closeClients() or stop(). */
  client(): Cluster {
    const client = newClusterClient(this.cluster.seeds, this.clientOptions);
    this.clients.push(client);
    return client;
  }

  /** The Cluster clients open now (bullmq defines its scripts on them). */
  openClients(): readonly Cluster[] {
    return [...this.clients];
  }

  /** Index in `masters` of the master serving `key`'s slot. */
  masterIndexOf(key: string): number {
    const slot = calculateSlot(key);
    const index = this.masters.findIndex((node) => servesSlot(node, slot));
    if (index < 0) throw new Error(`no master serves slot ${slot} of ${key}`);
    return index;
  }

  async closeClients(): Promise<void> {
    for (const client of this.clients.splice(0)) await client.quit().catch(() => client.disconnect());
  }

  /** Empties every master (and so its replica): the next case starts from an empty cluster. */
  async flush(): Promise<void> {
    await Promise.all(this.masterConnections.map((redis) => redis.flushall()));
  }

  async stop(): Promise<void> {
    await this.closeClients();
    for (const redis of [...this.masterConnections, ...this.replicaConnections]) await redis.quit().catch(() => redis.disconnect());
    await this.cluster.stop();
  }
}

/** Queues and throttle namespace of one layout: where their keys live. */
export interface Layout {
  readonly label: string;
  readonly prefix: string;
  readonly queues: readonly string[];
  /** Master index of each queue's keys, and of the throttle namespace. */
  readonly queueMasters: readonly number[];
  readonly namespaceMaster: number;
}

function layoutOf(bench: BenchCluster, label: string, prefix: string, queues: string[]): Layout {
  const keys = new ThrottleKeys(prefix);
  const queueMasters = queues.map((queue) => {
    const bullmqKey = `${prefix}:${queue}:wait`;
    const ours = keys.queue(queue).state;
    if (calculateSlot(bullmqKey) !== calculateSlot(ours)) throw new Error(`${queue}: bullmq's keys and the throttle's per-queue keys are in different slots`);
    return bench.masterIndexOf(ours);
  });
  return { label, prefix, queues, queueMasters, namespaceMaster: bench.masterIndexOf(keys.registryVersion) };
}

/**
 * Three hash-tagged queues `{<tag>N}` under a tagless prefix, each on a different master; the namespace (the
 * prefix, hashed whole) is on whichever master serves its slot, so it shares a master with one queue but
 * never a slot: every queue delivers leased.
 */
export function spreadLayout(bench: BenchCluster, prefix: string, tag: string): Layout {
  const chosen: string[] = [];
  const used = new Set<number>();
  for (let i = 1; chosen.length < bench.masters.length && i < 1000; i++) {
    const queue = `{${tag}${i}}`;
    const master = bench.masterIndexOf(`${prefix}:${queue}:wait`);
    if (used.has(master)) continue;
    used.add(master);
    chosen.push(queue);
  }
  if (chosen.length < bench.masters.length) throw new Error(`found no queue name {${tag}N} for every master`);
  return layoutOf(bench, 'three queues on three masters', prefix, chosen.sort());
}

/** Three queues under a hash-tagged prefix `{<tag>}`: they and the namespace are in one slot (exact delivery). */
export function oneSlotLayout(bench: BenchCluster, tag: string): Layout {
  return layoutOf(bench, 'three queues in one slot', `{${tag}}`, ['q1', 'q2', 'q3']);
}

export function describeLayout(layout: Layout, bench: BenchCluster): string {
  const port = (index: number) => bench.masters[index].port;
  return `${layout.label}: prefix ${layout.prefix}, queues ${layout.queues.map((q, i) => `${q}@${port(layout.queueMasters[i])}`).join(' ')}, throttle namespace @${port(layout.namespaceMaster)}`;
}
