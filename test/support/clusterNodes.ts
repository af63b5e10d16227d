/** One line of `CLUSTER NODES`, as the node that answered sees it. */
export interface ClusterNodeView {
  id: string;
  host: string;
  port: number;
  role: 'master' | 'replica';
  /** The id of the master it replicates (replicas only). */
  masterId: string | undefined;
  /** Slot ranges it serves, inclusive: [[0, 5460]]; empty for replicas. */
  slots: Array<[number, number]>;
  /** Raw flags: myself, master, slave, fail?, fail, handshake, noaddr, nofailover. */
  flags: string[];
  /** Flagged `fail?` (PFAIL) or `fail` by the node that answered. */
  failing: boolean;
  linkState: 'connected' | 'disconnected';
}

/**
 * Parses `CLUSTER NODES`:
 * `<id> <ip:port@cport[,hostname]> <flags> <master|-> <ping-sent> <pong-recv> <epoch> <link> <slot>...`.
 * Slots being migrated or imported (`[5461->-<id>]`) are not served yet and are skipped.
 */
export function parseClusterNodes(text: string): ClusterNodeView[] {
  return text.split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
    const [id, address, flagText, master, , , , linkState, ...slotFields] = line.split(' ');
    const hostPort = address.split('@')[0];
    const colon = hostPort.lastIndexOf(':');
    const flags = flagText.split(',');
    const slots: Array<[number, number]> = slotFields.filter((field) => !field.startsWith('[')).map((field) => {
      const [start, end] = field.split('-').map(Number);
      return [start, end ?? start];
    });
    return {
      id,
      host: hostPort.slice(0, colon),
      port: Number(hostPort.slice(colon + 1)),
      role: flags.includes('master') ? 'master' : 'replica',
      masterId: master === '-' ? undefined : master,
      slots,
      flags,
      failing: flags.includes('fail') || flags.includes('fail?'),
      linkState: linkState === 'connected' ? 'connected' : 'disconnected',
    };
  });
}

export const CLUSTER_SLOTS = 16_384;

export function servesSlot(node: ClusterNodeView, slot: number): boolean {
  return node.slots.some(([start, end]) => slot >= start && slot <= end);
}

/** slot -> id of the master serving it, for comparing two nodes' views; undefined entries are uncovered. */
export function slotOwners(view: ClusterNodeView[]): string[] {
  const owners: string[] = new Array(CLUSTER_SLOTS);
  for (const node of view) {
    if (node.role !== 'master' || node.failing) continue;
    for (const [start, end] of node.slots) for (let slot = start; slot <= end; slot++) owners[slot] = node.id;
  }
  return owners;
}
