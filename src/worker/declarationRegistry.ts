import { ThrottleSpec } from '../declarations/ThrottleSpec';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { RegistryEntry } from './queueConfig';

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
    return this.call('');
  }

  /** The queues (under this worker's prefix) of every entry that lapsed in a call since the last take: their held jobs may need putting back. */
  takeLapsedQueues(): string[] {
    const queues = [...this.lapsedQueues];
    this.lapsedQueues.clear();
    return queues;
  }

  private async call(json: string): Promise<RegistrySnapshot> {
    const reply = (await this.runner.run('registerDeclarations', [this.keys.registryDeclarations, this.keys.registryAlive, this.keys.registryVersion], [
      this.entry.workerId, json, this.ttlMs,
    ])) as (string | null)[];
    const version = Number(reply[1]);
    const lapsedCount = Number(reply[2]);
    const lapsed: string[] = [];
    for (let i = 3; i < 3 + 2 * lapsedCount; i += 2) {
      lapsed.push(String(reply[i]));
      // Only queues under this worker's prefix: another prefix's queue may be on another Redis.
      const lapsedEntry = readEntry(reply[i + 1]);
      if (typeof lapsedEntry?.queue === 'string' && lapsedEntry.prefix === this.entry.prefix) this.lapsedQueues.add(lapsedEntry.queue);
    }
    const entries: RegistryEntry[] = [];
    for (let i = 3 + 2 * lapsedCount; i < reply.length; i += 2) {
      const entry = readEntry(reply[i + 1]);
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
    ...(throttle.costSpec ? { costSpec: throttle.costSpec } : {}) };
}
