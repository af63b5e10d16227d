import { ScriptCallSpec } from '../scripts';
import { fixedCall, fixedKeysScript } from './scriptCall';

/**
 * lua/nodeReplicas-1.lua, on the node a confirmed call ran on (src/redis/ReplicaConfirmation.ts): whether what the
 * call delivered must be held by a replica before it may start. Sent in the call's own pipeline.
 */
export const nodeReplicasScript = fixedKeysScript('nodeReplicas', ['record']);

/** The role of a master (any other role: the call ran on a node that is no master now). */
export const MASTER_ROLE = 'master';

export interface NodeReplicasInput {
  /** KEYS[1]: a HASH on the node, in the slot of the call confirmed. */
  readonly record: string;
  /** How long after its last replica left the node still asks for confirmation (ms). */
  readonly graceMs: number;
}

export interface NodeReplicas {
  /** MASTER_ROLE or another role. */
  role: string;
  /** INFO's master_replid: it changes when a replica is promoted, or a master follows a new one. */
  replid: string;
  /** Replicas online. */
  replicas: number;
  /** Ask a replica (WAIT) before the call's deliveries start (false: there is no replica to ask). */
  confirm: boolean;
  /** A master that had replicas and has none now, and its run id (who to ask a Sentinel about). */
  orphan: boolean;
  runid: string;
}

export function nodeReplicasCall(input: NodeReplicasInput): ScriptCallSpec {
  return fixedCall(nodeReplicasScript, { record: input.record }, [input.graceMs]);
}

/** The reply { role, replid, replicas, confirm, orphan, runid }; undefined when it is not one. */
export function parseNodeReplicasReply(raw: unknown): NodeReplicas | undefined {
  if (!Array.isArray(raw)) return undefined;
  const [role, replid, replicas, confirm, orphan, runid] = raw as (string | number)[];
  return {
    role: String(role), replid: String(replid), replicas: Number(replicas), confirm: Number(confirm) === 1,
    orphan: Number(orphan) === 1, runid: String(runid ?? ''),
  };
}
