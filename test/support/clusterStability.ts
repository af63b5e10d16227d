import { ClusterNodeView, CLUSTER_SLOTS, parseClusterNodes, slotOwners } from './clusterNodes';
import { infoOf, parseInfo, redisCommand } from './redisAdmin';
import { done, notYet, Probe } from './waitUntil';

/**
 * One look at whether the cluster formed by the running nodes (`runningPorts`: not killed, not SIGSTOPped) has
 * settled. Done, with the agreed view, when:
 * - every running node says `cluster_state:ok` with all 16384 slots ok;
 * - every running node's `CLUSTER NODES` gives the same topology: which master serves each slot, and for each
 *   running node its role, its master and its slots; and shows no running node failing, disconnected or in handshake;
 * - every slot's master is a running node;
 * - each running node's own `INFO replication` agrees with that topology: role, the master it replicates (by
 *   port), and a replica's link to it is up.
 * Comparing whole views matters: right after a failover one node can already have the old master as a replica
 * while another still lists it as a master without slots.
 */
export async function probeClusterStability(runningPorts: number[]): Promise<Probe<ClusterNodeView[]>> {
  const running = new Set(runningPorts);
  let agreed: { by: number; topology: string; view: ClusterNodeView[] } | undefined;
  for (const port of runningPorts) {
    const info = parseInfo(String(await redisCommand(port, ['CLUSTER', 'INFO'], 1_000)));
    if (info.get('cluster_state') !== 'ok') return notYet(`node ${port} says cluster_state:${info.get('cluster_state')}`);
    if (info.get('cluster_slots_ok') !== String(CLUSTER_SLOTS)) return notYet(`node ${port} says cluster_slots_ok:${info.get('cluster_slots_ok')}`);
    const view = parseClusterNodes(String(await redisCommand(port, ['CLUSTER', 'NODES'], 1_000)));
    const unknown = runningPorts.find((other) => !view.some((node) => node.port === other));
    if (unknown !== undefined) return notYet(`node ${port} does not know node ${unknown} yet`);
    const unhealthy = view.find((node) => running.has(node.port) && (node.failing || node.linkState !== 'connected' || node.flags.includes('handshake')));
    if (unhealthy) return notYet(`node ${port} sees node ${unhealthy.port} as ${unhealthy.flags.join(',')} ${unhealthy.linkState}`);
    const topology = topologyOf(view, running);
    if (agreed && topology !== agreed.topology) return notYet(`nodes ${agreed.by} and ${port} see different topologies`);
    agreed ??= { by: port, topology, view };
  }
  if (!agreed) return notYet('no node is running');
  const { view } = agreed;
  const stranded = view.find((node) => node.role === 'master' && node.slots.length > 0 && !running.has(node.port));
  if (stranded) return notYet(`slots are served by ${stranded.port}, which is not running`);
  for (const port of runningPorts) {
    const replication = await infoOf(port, 'replication', 1_000);
    const node = view.find((candidate) => candidate.port === port);
    const role = replication.get('role') === 'master' ? 'master' : 'replica';
    if (node?.role !== role) return notYet(`node ${port} answers role ${role} but the cluster has it as ${node?.role}`);
    if (role === 'master') continue;
    const masterPort = view.find((candidate) => candidate.id === node.masterId)?.port;
    if (replication.get('master_port') !== String(masterPort)) return notYet(`replica ${port} replicates ${replication.get('master_port')}, the cluster says ${masterPort}`);
    if (replication.get('master_link_status') !== 'up') return notYet(`replica ${port} has master_link_status:${replication.get('master_link_status')}`);
  }
  return done(view);
}

function topologyOf(view: ClusterNodeView[], running: Set<number>): string {
  const nodes = view
    .filter((node) => running.has(node.port))
    .sort((a, b) => a.port - b.port)
    .map((node) => `${node.port}:${node.role}:${node.masterId ?? '-'}:${node.slots.map(([a, b]) => `${a}-${b}`).join(' ')}`);
  return `${nodes.join('|')}#${slotOwners(view).join(',')}`;
}
