import { ThrottleSpec } from '../../declarations/ThrottleSpec';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { runRegisterDeclarations, WITHDRAW_ENTRY } from '../../lua/calls/registerDeclarations';
import type { RegistryEntry } from '../../queueState/registryEntry';

/**
 * One worker's entry in the registry of live declarations: refreshed well within its time to live, so a
 * crashed worker's declarations lapse after at most `ttlMs`, and withdrawn at once on close.
 */
export class DeclarationRegistry {
  /** Queues of entries that lapsed in this registry's calls, not yet taken (takeLapsedQueues). */
  private readonly lapsedQueues = new Set<string>();

  constructor(
    private readonly runner: ScriptRunner,
    private readonly keys: ThrottleKeys,
    readonly entry: RegistryEntry,
    readonly ttlMs: number,
  ) {}

  /** Records this worker's declarations again; returns every live entry and the workers whose entries just lapsed. */
  refresh(): Promise<RegistrySnapshot> {
    return this.call(JSON.stringify(this.entry));
  }

  /** Removes this worker's declarations and returns the live entries that remain. */
  withdraw(): Promise<RegistrySnapshot> {
    return this.call(WITHDRAW_ENTRY);
  }

  /** The queues (under this worker's prefix) of every entry that lapsed in a call since the last take: their held jobs may need putting back. */
  takeLapsedQueues(): string[] {
    const queues = [...this.lapsedQueues];
    this.lapsedQueues.clear();
    return queues;
  }

  private async call(json: string): Promise<RegistrySnapshot> {
    const reply = await runRegisterDeclarations(this.runner, {
      entries: this.keys.registryDeclarations, alive: this.keys.registryAlive, version: this.keys.registryVersion,
      workerId: this.entry.workerId, json, ttlMs: this.ttlMs,
    });
    const { version } = reply;
    const lapsed: string[] = [];
    for (const { workerId, json: lapsedJson } of reply.lapsed) {
      lapsed.push(workerId);
      // Only queues under this worker's prefix: another prefix's queue may be on another Redis.
      const lapsedEntry = readEntry(lapsedJson);
      if (typeof lapsedEntry?.queue === 'string' && lapsedEntry.prefix === this.entry.prefix) this.lapsedQueues.add(lapsedEntry.queue);
    }
    const entries: RegistryEntry[] = [];
    for (const live of reply.live) {
      const entry = readEntry(live.json);
      // An entry this version cannot read is not ours to interpret; it lapses with its worker.
      if (entry) entries.push(entry);
    }
    return { entries, lapsed, version };
  }
}

function readEntry(json: string | null): RegistryEntry | undefined {
  if (json === null) return undefined;
  try {
    return JSON.parse(json) as RegistryEntry;
  } catch {
    return undefined;
  }
}

export interface RegistrySnapshot {
  entries: RegistryEntry[];
  /** Workers whose declarations lapsed just now: they stopped refreshing them (crashed, or cut off). */
  lapsed: string[];
  /** The registry's version: it goes up with every change, so a config worked out from it says how recent it is. */
  version: number;
}

/** A declaration as it travels through the registry: plain data, no class. */
export function declarationData(throttle: ThrottleSpec): ThrottleSpec {
  return { name: throttle.name, limits: throttle.limits, keyParts: throttle.keyParts, missing: throttle.missing, ...(throttle.tokenRate ? { tokenRate: throttle.tokenRate } : {}),
    ...(throttle.maxInFlight !== undefined ? { maxInFlight: throttle.maxInFlight } : {}),
    ...(throttle.costSpec ? { costSpec: throttle.costSpec } : {}),
    ...(throttle.adaptiveSpec ? { adaptiveSpec: throttle.adaptiveSpec } : {}),
    ...(throttle.maxWaitMs !== undefined ? { maxWaitMs: throttle.maxWaitMs } : {}) };
}
