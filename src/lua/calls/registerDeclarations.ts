import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/registerDeclarations-3.lua, in the namespace's slot: records (or withdraws) one worker's throttle declarations,
 * drops those whose worker stopped refreshing them, and answers every live one.
 */
export const registerDeclarationsScript = fixedKeysScript('registerDeclarations', ['entries', 'alive', 'version']);

/** The declaration JSON that withdraws the worker's entry. */
export const WITHDRAW_ENTRY = '';

/** A registry entry as the reply gives it: its worker, and its JSON as stored (null when it has none). */
export interface RegistryReplyEntry {
  readonly workerId: string;
  readonly json: string | null;
}

export interface RegisterDeclarationsInput {
  /** KEYS[1..3]: the registry's entries (HASH worker id -> JSON), alive (ZSET worker id -> expiry ms), version (a counter). */
  readonly entries: string;
  readonly alive: string;
  readonly version: string;
  readonly workerId: string;
  /** The worker's declaration JSON, or WITHDRAW_ENTRY. */
  readonly json: string;
  /** Time to live of the entry (ms). */
  readonly ttlMs: number;
}

export interface RegisterDeclarationsReply {
  nowMs: number;
  /** The registry's version: it goes up with every change. */
  version: number;
  /** Entries that lapsed just now (their queues' held jobs may need putting back). */
  lapsed: RegistryReplyEntry[];
  /** Every live entry. */
  live: RegistryReplyEntry[];
}

export function runRegisterDeclarations(runner: ScriptRunner, input: RegisterDeclarationsInput): Promise<RegisterDeclarationsReply> {
  const call = fixedCall(registerDeclarationsScript, { entries: input.entries, alive: input.alive, version: input.version }, [
    input.workerId, input.json, input.ttlMs,
  ]);
  return sendCall(runner, call).then((raw) => {
    const reply = raw as (string | null)[];
    const lapsedCount = Number(reply[2]);
    const lapsed: RegistryReplyEntry[] = [];
    for (let i = 3; i < 3 + 2 * lapsedCount; i += 2) lapsed.push({ workerId: String(reply[i]), json: reply[i + 1] });
    const live: RegistryReplyEntry[] = [];
    for (let i = 3 + 2 * lapsedCount; i < reply.length; i += 2) live.push({ workerId: String(reply[i]), json: reply[i + 1] });
    return { nowMs: Number(reply[0]), version: Number(reply[1]), lapsed, live };
  });
}
