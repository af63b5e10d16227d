import { ScriptRunner } from '../scripts';
import { sendCall, variableCall, variableKeysScript } from './scriptCall';

/**
 * lua/readSnapshot-n.lua: reads several keys of one slot at one moment, for figures that must add up
 * (src/admin/snapshotRead.ts). Reads only.
 */
export const readSnapshotScript = variableKeysScript('readSnapshot');

/** How a key is read (ARGV[i] for KEYS[i]; fields of hmget hold no ','). */
export type SnapshotOp =
  | 'get' | 'hgetall' | 'live' | 'first'
  | `hget:${string}` | `hmget:${string}` | `zscore:${string}` | `top:${number}`;

export interface ReadSnapshotInput {
  readonly reads: readonly { readonly key: string; readonly op: SnapshotOp }[];
}

export interface ReadSnapshotReply {
  /** The node's time at the read (ms). */
  nowMs: number;
  /** Each read's reply, in the order of `reads`. */
  replies: unknown[];
}

export function runReadSnapshot(runner: ScriptRunner, input: ReadSnapshotInput): Promise<ReadSnapshotReply> {
  const call = variableCall(readSnapshotScript, input.reads.map((read) => read.key), input.reads.map((read) => read.op));
  return sendCall(runner, call).then((raw) => {
    const reply = raw as unknown[];
    return { nowMs: Number(reply[0]), replies: reply.slice(1) };
  });
}
