import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import { ClusterNodeView, parseClusterNodes, servesSlot } from './clusterNodes';
import { probeClusterStability } from './clusterStability';
import { freeRedisPort } from './freeRedisPorts';
import { redisBinary } from './redisBinaries';
import { infoOf, redisCommand, tryRedisCommand } from './redisAdmin';
import { RedisProcessSpec, RedisSignal } from './redisProcess';
import { RedisProcessGroup } from './redisProcessGroup';
import { done, notYet, waitUntil } from './waitUntil';

export interface RedisClusterOptions {
  /** Masters (default 3); each gets `replicasPerMaster` replicas (default 1, `--cluster-replicas 1`). */
  masters?: number;
  replicasPerMaster?: number;
  /** `cluster-node-timeout` (default 2000 ms): how long a silent master stays master before its replica takes over. */
  nodeTimeoutMs?: number;
  /** Extra redis-server arguments for every node, e.g. `['--min-replicas-to-write', '1']`. */
  extraArgs?: string[];
  /** Extra arguments for the node at this index (0-based, in start order; `redis-cli` makes the first ones masters). */
  argsForNode?: (index: number) => string[];
  /** Bound on cluster creation until stable (default 60 s). */
  startTimeoutMs?: number;
}

/** A node as a live node's `CLUSTER NODES` shows it, with the pid of our process on that port. */
export interface RedisClusterNode extends ClusterNodeView {
  /** Undefined when the process is not running (killed and not restarted). */
  pid: number | undefined;
}

export type FailoverMode = 'FORCE' | 'TAKEOVER';

const HOST = '127.0.0.1';

/** A Redis Cluster of redis-server child processes on loopback ports; see docs/testing.md. */
export class RedisCluster {
  /** Every node's address: ioredis `new Cluster(seeds)` tries them in turn, so a dead one is skipped. */
  readonly seeds: { host: string; port: number }[];

  constructor(private readonly group: RedisProcessGroup, readonly ports: number[]) {
    this.seeds = ports.map((port) => ({ host: HOST, port }));
  }

  /** The cluster as the first live node that answers `CLUSTER NODES` sees it (right after a fault views can differ: `waitForStable` first). */
  async nodes(): Promise<RedisClusterNode[]> {
    for (const redis of this.group.all().filter((process) => process.state === 'running')) {
      const text = await tryRedisCommand(redis.port, ['CLUSTER', 'NODES']);
      if (typeof text === 'string') return this.withPids(parseClusterNodes(text));
    }
    throw new Error('no node of the cluster answers CLUSTER NODES');
  }

  async masterOfSlot(slot: number): Promise<RedisClusterNode> {
    const nodes = await this.nodes();
    const master = nodes.find((node) => node.role === 'master' && !node.failing && servesSlot(node, slot));
    if (!master) throw new Error(`no live master serves slot ${slot}: ${describeNodes(nodes)}`);
    return master;
  }

  /** The master holding `key` (its hash slot, as ioredis and Redis compute it: the first `{tag}` only). */
  masterOfKey(key: string): Promise<RedisClusterNode> {
    return this.masterOfSlot(calculateSlot(key));
  }

  async replicasOf(masterPort: number): Promise<RedisClusterNode[]> {
    const nodes = await this.nodes();
    const master = nodes.find((node) => node.port === masterPort);
    if (!master || master.role !== 'master') throw new Error(`port ${masterPort} is not a master: ${describeNodes(nodes)}`);
    return nodes.filter((node) => node.role === 'replica' && node.masterId === master.id && !node.failing);
  }

  /** A live replica of the master on `masterPort` (throws when it has none). */
  async replicaOf(masterPort: number): Promise<RedisClusterNode> {
    const [replica] = await this.replicasOf(masterPort);
    if (!replica) throw new Error(`master on port ${masterPort} has no live replica: ${describeNodes(await this.nodes())}`);
    return replica;
  }

  /** Signals the node's process: SIGKILL/SIGTERM return once it exited; SIGSTOP freezes it (past the node timeout its replica takes over); SIGCONT resumes it. */
  kill(port: number, signal: RedisSignal): Promise<void> {
    return this.group.kill(port, signal);
  }

  /** Starts the node on `port` again with its config and `nodes.conf` (same node id, empty data: no persistence); it rejoins. Waits for `waitForStable` unless told not to. */
  async restart(port: number, options: { waitForStable?: boolean } = {}): Promise<void> {
    await this.group.restart(port);
    if (options.waitForStable ?? true) await this.waitForStable();
  }

  /**
   * `CLUSTER FAILOVER [FORCE|TAKEOVER]` sent to a replica; resolves when it is master and the cluster is stable
   * again. A plain (coordinated) failover gives up by itself when the master does not answer within 5 s, so it is
   * asked again every 6 s until `timeoutMs`.
   */
  async failover(replicaPort: number, mode?: FailoverMode, timeoutMs = 30_000): Promise<void> {
    const role = (await infoOf(replicaPort, 'replication')).get('role');
    if (role !== 'slave') throw new Error(`failover(${replicaPort}) needs a replica, and that node is ${role}`);
    const command = ['CLUSTER', 'FAILOVER', ...(mode ? [mode] : [])];
    await redisCommand(replicaPort, command); // a refusal (e.g. its master is down: use FORCE) throws here
    let askedAt = Date.now();
    try {
      await waitUntil(`replica ${replicaPort} to become master after ${command.join(' ')}`, async () => {
        if (Date.now() - askedAt > 6_000) {
          await redisCommand(replicaPort, command);
          askedAt = Date.now();
        }
        const now = (await infoOf(replicaPort, 'replication', 1_000)).get('role');
        return now === 'master' ? done(undefined) : notYet(`it is still ${now}`);
      }, { timeoutMs });
    } catch (error) {
      throw new Error(`${(error as Error).message}\nits log:\n${this.group.get(replicaPort).logTail()}`);
    }
    await this.waitForStable(timeoutMs);
  }

  /**
   * Waits until the running nodes (not killed, not SIGSTOPped) have settled: `cluster_state:ok`, every slot served
   * by a running master, all of them agreeing on the whole topology, each node's own role matching it, every
   * replica's link up (details in clusterStability.ts). Resolves with the nodes then.
   */
  async waitForStable(timeoutMs = 30_000): Promise<RedisClusterNode[]> {
    const view = await waitUntil('a stable cluster', () => probeClusterStability(this.runningPorts()), { timeoutMs, intervalMs: 200 });
    return this.withPids(view);
  }

  /** Any command to one node (`CONFIG SET`, `DEBUG`, `INFO`), on a connection of its own. */
  command(port: number, ...args: (string | number)[]): Promise<unknown> {
    return redisCommand(port, args);
  }

  /** Kills every node it started and removes their directories; idempotent (also done on process exit). */
  stop(): Promise<void> {
    return this.group.stop();
  }

  private runningPorts(): number[] {
    return this.group.all().filter((process) => process.state === 'running').map((process) => process.port);
  }

  private withPids(view: ClusterNodeView[]): RedisClusterNode[] {
    return view
      .map((node) => ({ ...node, pid: this.group.has(node.port) ? this.group.get(node.port).pid : undefined }))
      .sort((a, b) => a.port - b.port);
  }
}

/** Starts the nodes, joins them with `redis-cli --cluster create`, and resolves once the cluster is stable. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 1;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const group = new RedisProcessGroup('cluster');
  try {
    const count = masters * (1 + replicasPerMaster);
    const ports = await Promise.all(Array.from({ length: count }, (_, index) => startNode(group, nodeArgs(options, index))));
    const cli = redisBinary('redis-cli');
    const addresses = ports.map((port) => `${HOST}:${port}`);
    try {
      await promisify(execFile)(cli, ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'], { timeout: timeoutMs });
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`redis-cli --cluster create ${addresses.join(' ')} failed: ${(error as Error).message}\n${stdout ?? ''}${stderr ?? ''}`);
    }
    const cluster = new RedisCluster(group, ports);
    await cluster.waitForStable(timeoutMs);
    return cluster;
  } catch (error) {
    await group.stop();
    throw error;
  }
}

function nodeArgs(options: RedisClusterOptions, index: number): (port: number, dir: string) => string[] {
  return (port, dir) => [
    '--port', String(port), '--bind', HOST, '--daemonize', 'no',
    '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'),
    '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 2_000),
    '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', join(dir, 'redis.log'),
    // Replicas sync at once instead of waiting 5 s for others to share a diskless transfer.
    '--repl-diskless-sync-delay', '0',
    // Fault tests may use DEBUG (SLEEP, SET-ACTIVE-EXPIRE) from loopback.
    '--enable-debug-command', 'local',
    ...(options.extraArgs ?? []), ...(options.argsForNode?.(index) ?? []),
  ];
}

/** Starts one node on a free port (and bus port); another process, or a node started beside it, may take a probed port first, so it retries. */
async function startNode(group: RedisProcessGroup, args: (port: number, dir: string) => string[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freeRedisPort({ withBusPort: true });
    try {
      await group.start(`node-${port}`, (dir): RedisProcessSpec => ({ port, dir, args: args(port, dir) }));
      return port;
    } catch (error) {
      // Nodes start side by side: two may probe the same free port (the group refuses the second: "already has").
      if (attempt >= 3 || !/in use|bind|already has a redis-server/i.test((error as Error).message)) throw error;
    }
  }
}

function describeNodes(nodes: ClusterNodeView[]): string {
  return nodes.map((node) => `${node.port} ${node.flags.join(',')}${node.slots.length ? ` ${node.slots.map(([a, b]) => `${a}-${b}`).join(' ')}` : ''}`).join('; ');
}
