import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import { ClusterNodeView, CLUSTER_SLOTS, parseClusterNodes, servesSlot, slotOwners } from './clusterNodes';
import { freeRedisPort } from './freeRedisPorts';
import { redisBinary } from './redisBinaries';
import { infoOf, parseInfo, redisCommand, tryRedisCommand } from './redisAdmin';
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

  /** `CLUSTER FAILOVER [FORCE|TAKEOVER]` sent to a replica; resolves when it is master and the cluster is stable again. */
  async failover(replicaPort: number, mode?: FailoverMode, timeoutMs = 20_000): Promise<void> {
    const role = (await infoOf(replicaPort, 'replication')).get('role');
    if (role !== 'slave') throw new Error(`failover(${replicaPort}) needs a replica, and that node is ${role}`);
    await redisCommand(replicaPort, ['CLUSTER', 'FAILOVER', ...(mode ? [mode] : [])]);
    await waitUntil(`replica ${replicaPort} to become master after CLUSTER FAILOVER${mode ? ` ${mode}` : ''}`, async () => {
      const now = (await infoOf(replicaPort, 'replication', 1_000)).get('role');
      // A plain CLUSTER FAILOVER needs its master to answer; it gives up by itself after 5 s.
      return now === 'master' ? done(undefined) : notYet(`it is still ${now}`);
    }, { timeoutMs });
    await this.waitForStable(timeoutMs);
  }

  /**
   * Waits until every running node (not killed, not SIGSTOPped) says `cluster_state:ok` with all 16384 slots ok,
   * they all agree which master serves each slot, each such master is one of our running nodes and answers as
   * master, no running node is flagged failing or disconnected by another, and every running replica's link to
   * its master is up. Resolves with the nodes then.
   */
  async waitForStable(timeoutMs = 30_000): Promise<RedisClusterNode[]> {
    return waitUntil('a stable cluster', async () => {
      const running = this.group.all().filter((process) => process.state === 'running');
      const runningPorts = new Set(running.map((process) => process.port));
      let agreed: string | undefined;
      let view: ClusterNodeView[] = [];
      for (const { port } of running) {
        const info = parseInfo(String(await redisCommand(port, ['CLUSTER', 'INFO'], 1_000)));
        if (info.get('cluster_state') !== 'ok') return notYet(`node ${port} says cluster_state:${info.get('cluster_state')}`);
        if (info.get('cluster_slots_ok') !== String(CLUSTER_SLOTS)) return notYet(`node ${port} says cluster_slots_ok:${info.get('cluster_slots_ok')}`);
        view = parseClusterNodes(String(await redisCommand(port, ['CLUSTER', 'NODES'], 1_000)));
        const owners = slotOwners(view).join(',');
        if (agreed !== undefined && owners !== agreed) return notYet(`node ${port} sees other slot owners than node ${running[0].port}`);
        agreed = owners;
        const unhealthy = view.find((node) => runningPorts.has(node.port) && (node.failing || node.linkState !== 'connected' || node.flags.includes('handshake')));
        if (unhealthy) return notYet(`node ${port} sees node ${unhealthy.port} as ${unhealthy.flags.join(',')} ${unhealthy.linkState}`);
        const unknown = [...runningPorts].find((other) => !view.some((node) => node.port === other));
        if (unknown !== undefined) return notYet(`node ${port} does not know node ${unknown} yet`);
      }
      for (const node of view) {
        if (node.role === 'master' && node.slots.length > 0 && !runningPorts.has(node.port)) return notYet(`slots are served by ${node.port}, which is not running`);
        // Right after `--cluster create` a replica-to-be is still a master without slots for a moment.
        if (node.role === 'master' && node.slots.length === 0 && runningPorts.has(node.port)) return notYet(`node ${node.port} is a master without slots (a replica not yet attached)`);
      }
      for (const { port } of running) {
        const replication = await infoOf(port, 'replication', 1_000);
        const inView = view.find((node) => node.port === port);
        const role = replication.get('role') === 'master' ? 'master' : 'replica';
        if (inView?.role !== role) return notYet(`node ${port} answers role ${role} but the cluster has it as ${inView?.role}`);
        if (role === 'replica' && replication.get('master_link_status') !== 'up') return notYet(`replica ${port} has master_link_status:${replication.get('master_link_status')}`);
      }
      return done(this.withPids(view));
    }, { timeoutMs, intervalMs: 200 });
  }

  /** Any command to one node (`CONFIG SET`, `DEBUG`, `INFO`), on a connection of its own. */
  command(port: number, ...args: (string | number)[]): Promise<unknown> {
    return redisCommand(port, args);
  }

  /** Kills every node it started and removes their directories; idempotent (also done on process exit). */
  stop(): Promise<void> {
    return this.group.stop();
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

/** Starts one node on a free port (and bus port); another process may take a probed port first, so it retries. */
async function startNode(group: RedisProcessGroup, args: (port: number, dir: string) => string[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freeRedisPort({ withBusPort: true });
    try {
      await group.start(`node-${port}`, (dir): RedisProcessSpec => ({ port, dir, args: args(port, dir) }));
      return port;
    } catch (error) {
      if (attempt >= 3 || !/in use|bind/i.test((error as Error).message)) throw error;
    }
  }
}

function describeNodes(nodes: ClusterNodeView[]): string {
  return nodes.map((node) => `${node.port} ${node.flags.join(',')}${node.slots.length ? ` ${node.slots.map(([a, b]) => `${a}-${b}`).join(' ')}` : ''}`).join('; ');
}
