import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis, Cluster } from 'ioredis';
import { bundleLua, BundleOptions, LUA_DIR } from './luaBundler';

/** One of the package's Lua scripts, bundled with its includes (what a test build may swap for its own). */
export interface LuaScript {
  /** The script's name in lua/, e.g. 'grantDeliveries'. */
  readonly name: string;
  /** undefined for scripts that take a variable number of keys (the caller passes numkeys first). */
  readonly numberOfKeys: number | undefined;
  /** The script's source with its includes inlined, as sent to Redis. */
  readonly lua: string;
  /** The ioredis command it is registered under: versioned by content, so two versions can share a connection. */
  readonly command: string;
}

const FILE_NAME = /^([a-zA-Z][a-zA-Z0-9]*)-(\d+|n)\.lua$/;

export function loadLuaScripts(options: BundleOptions = {}): Map<string, LuaScript> {
  const scripts = new Map<string, LuaScript>();
  for (const file of readdirSync(LUA_DIR)) {
    const match = FILE_NAME.exec(file);
    if (!match) continue;
    const lua = bundleLua(join(LUA_DIR, file), options);
    const version = createHash('sha1').update(lua).digest('hex').slice(0, 10);
    scripts.set(match[1], {
      name: match[1],
      numberOfKeys: match[2] === 'n' ? undefined : Number(match[2]),
      lua,
      command: `bullmqThrottle_${match[1]}_${version}`,
    });
  }
  return scripts;
}

let productionScripts: Map<string, LuaScript> | undefined;
export function defaultLuaScripts(): Map<string, LuaScript> {
  productionScripts ??= loadLuaScripts();
  return productionScripts;
}

type Client = Redis | Cluster;
type ScriptCall = (...args: (string | number | Buffer)[]) => Promise<unknown>;

/**
 * Runs the named scripts on one connection, registering each with defineCommand on first use. Called through the
 * script layer (src/lua/calls/), whose modules build each script's KEYS and ARGV and read its reply.
 */
export class ScriptRunner {
  constructor(
    private readonly client: Client,
    private readonly scripts: Map<string, LuaScript> = defaultLuaScripts(),
    /** Appended to every call's ARGV: only test builds of the scripts read it. */
    private readonly extraArgs: () => (string | number)[] = () => [],
  ) {}

  run(name: string, keys: readonly string[], args: readonly (string | number | Buffer)[]): Promise<unknown> {
    return this.send(this.client as unknown as Record<string, ScriptCall | undefined>, this.defined(name), keys, args);
  }

  /**
   * Several scripts, then plain commands, in one pipeline: one round trip, run back to back on one connection
   * (in Redis Cluster every key must be of one slot, and keyless commands such as WAIT go with them). Each
   * entry is the call's error or reply.
   */
  async pipeline(scripts: readonly ScriptCallSpec[], commands: readonly (readonly (string | number)[])[] = []): Promise<PipelineEntry[]> {
    const defined = scripts.map((s) => this.defined(s.name));
    const pipeline = this.client.pipeline();
    const target = pipeline as unknown as Record<string, ScriptCall | undefined>;
    scripts.forEach((s, i) => void this.send(target, defined[i], s.keys, s.args));
    for (const [command, ...args] of commands) pipeline.call(String(command), ...args);
    const results = (await pipeline.exec()) ?? [];
    const entries = results.map(([error, reply]) => ({ error: error ?? undefined, reply }));
    if (entries.some((e) => e.error && /^(MOVED|ASK) /.test(e.error.message))) this.refreshSlots();
    return entries;
  }

  /**
   * ioredis retries a cluster pipeline on MOVED only when every command in it failed alike; a keyless WAIT
   * with them answers otherwise, so the pipeline fails and ioredis keeps the stale slot map until its next
   * periodic refresh (seconds, after a failover). Refreshing now lets the next call reach the new master.
   */
  private refreshSlots(): void {
    const cluster = this.client as unknown as { refreshSlotsCache?: (callback?: () => void) => void };
    if (typeof cluster.refreshSlotsCache === 'function') cluster.refreshSlotsCache(() => undefined);
  }

  private defined(name: string): LuaScript {
    const script = this.scripts.get(name);
    if (!script) throw new Error(`No Lua script named '${name}' in ${LUA_DIR}.`);
    const client = this.client as unknown as Record<string, ScriptCall | undefined>;
    if (typeof client[script.command] !== 'function') {
      this.client.defineCommand(script.command, { lua: script.lua, numberOfKeys: script.numberOfKeys });
    }
    return script;
  }

  private send(target: Record<string, ScriptCall | undefined>, script: LuaScript, keys: readonly string[], args: readonly (string | number | Buffer)[]): Promise<unknown> {
    const call = target[script.command] as ScriptCall;
    const extra = this.extraArgs();
    return script.numberOfKeys === undefined
      ? call.call(target, keys.length, ...keys, ...args, ...extra)
      : call.call(target, ...keys, ...args, ...extra);
  }
}

export interface ScriptCallSpec {
  readonly name: string;
  readonly keys: readonly string[];
  readonly args: readonly (string | number | Buffer)[];
}

export interface PipelineEntry {
  readonly error?: Error;
  readonly reply: unknown;
}
