import { ScriptRunner } from '../scripts';
import { fixedCall, fixedKeysScript, sendCall } from './scriptCall';

/**
 * lua/noteNamespace-1.lua, in the throttle name's slot of the deployment: notes that a throttle name is declared
 * under a namespace, and answers the other namespaces where it is declared too.
 */
export const noteNamespaceScript = fixedKeysScript('noteNamespace', ['namespaces']);

export interface NoteNamespaceInput {
  /** KEYS[1]: the name's namespaces (ZSET namespace -> lapse ms; ThrottleKeys.namespacesOf). */
  readonly namespaces: string;
  readonly namespace: string;
  /** How long the entry lives unless refreshed (ms). */
  readonly ttlMs: number;
}

/** Resolves to the other namespaces with a live entry. */
export function runNoteNamespace(runner: ScriptRunner, input: NoteNamespaceInput): Promise<string[]> {
  return sendCall(runner, fixedCall(noteNamespaceScript, { namespaces: input.namespaces }, [input.namespace, input.ttlMs])) as Promise<string[]>;
}
