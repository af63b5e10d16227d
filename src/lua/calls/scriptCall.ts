import { ScriptCallSpec, ScriptRunner } from '../scripts';

/**
 * The typed script layer: one module in src/lua/calls/ per script of lua/ (`<name>.ts` for `<name>-<n>.lua`), which
 * builds the script's KEYS and ARGV from named inputs in the order its header gives them, reads its reply into a
 * typed result and names its reply codes. Nothing else calls a script by its name: the modules hand their calls to
 * ScriptRunner (or to a pipeline, through ReplicaConfirmation). test/lua/scriptCalls.test.ts holds every script to its
 * module and each module's key count to its script's file name.
 */

/** An ARGV value as ScriptRunner sends it. */
export type ScriptArg = string | number | Buffer;

/** A script whose file name gives its number of keys (`<name>-<n>.lua`): its KEYS by name, in the header's order. */
export interface FixedKeysScript<K extends string> {
  readonly name: string;
  readonly keys: readonly K[];
}

/** A script named `<name>-n.lua`: the call says how many keys it passes. */
export interface VariableKeysScript {
  readonly name: string;
  readonly keys: 'n';
}

export type ScriptDefinition = FixedKeysScript<string> | VariableKeysScript;

export function fixedKeysScript<const K extends string>(name: string, keys: readonly K[]): FixedKeysScript<K> {
  return Object.freeze({ name, keys: Object.freeze([...keys]) });
}

export function variableKeysScript(name: string): VariableKeysScript {
  return Object.freeze({ name, keys: 'n' as const });
}

/** The named KEYS of a fixed-keys script, as its call takes them. */
export type KeysOf<S> = S extends FixedKeysScript<infer K> ? { readonly [Key in K]: string } : never;

/** A fixed-keys script's KEYS, in the order the script names them. */
export function keysInOrder<K extends string>(script: FixedKeysScript<K>, keys: { readonly [Key in K]: string }): string[] {
  return script.keys.map((key) => keys[key]);
}

/** A call of a fixed-keys script: its KEYS in the order the script names them. */
export function fixedCall<K extends string>(script: FixedKeysScript<K>, keys: { readonly [Key in K]: string }, args: readonly ScriptArg[]): ScriptCallSpec {
  return { name: script.name, keys: keysInOrder(script, keys), args };
}

/** A call of a script with a variable number of keys (ScriptRunner passes their count first). */
export function variableCall(script: VariableKeysScript, keys: readonly string[], args: readonly ScriptArg[]): ScriptCallSpec {
  return { name: script.name, keys, args };
}

/**
 * Sends one call on the runner's connection, at once (no await before it: calls keep the order they are made in,
 * which the completion handover relies on).
 */
export function sendCall(runner: ScriptRunner, call: ScriptCallSpec): Promise<unknown> {
  return runner.run(call.name, call.keys, call.args);
}

/**
 * Sends a call whose deliveries (or grants) may start only once a replica holds them, when the node has replicas
 * (src/redis/ReplicaConfirmation.ts); `delivered` says whether a reply moved anything that needs confirming.
 */
export interface CallConfirmation {
  run(runner: ScriptRunner, call: ScriptCallSpec, delivered: (reply: unknown) => boolean): Promise<unknown>;
}

/** '1' for true, '' for false: how the scripts take a flag that is set when non-empty. */
export function flagArg(value: boolean): string {
  return value ? '1' : '';
}
