import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { UnknownThrottleError } from '../errors/UnknownThrottleError';
import { QueueThrottleKeys, ThrottleKeys } from '../keys/ThrottleKeys';
import { effectiveThrottle, entriesDeclaring } from '../queueState/queueConfig';
import type { RegistryEntry } from '../queueState/registryEntry';
import { AdminConnections } from './adminConnections';
import { suggestionText } from './nearbyNames';

/** The queues and throttles with live declarations (ThrottleAdmin.live documents each field). */
export interface LiveListing {
  queues: string[];
  throttles: { name: string; queues: string[] }[];
}

/**
 * The registry of the throttle namespace as ThrottleAdmin reads it: the live workers' declarations, and what they
 * name (their queues' keys, the throttles declared).
 */
export class LiveRegistry {
  constructor(private readonly keys: ThrottleKeys, private readonly connections: AdminConnections) {}

  /** Every live ThrottledWorker's declarations, judged live at `nowMs` (omitted: now); see ThrottleAdmin.liveEntries. */
  async liveEntries(nowMs?: number): Promise<RegistryEntry[]> {
    const now = nowMs ?? (await this.connections.nowMs());
    const [alive, raw] = await Promise.all([
      this.connections.ns.zrangebyscore(this.keys.registryAlive, `(${now}`, '+inf'),
      this.connections.ns.hgetall(this.keys.registryDeclarations),
    ]);
    const live = new Set(alive);
    const entries: RegistryEntry[] = [];
    for (const [workerId, json] of Object.entries(raw)) {
      if (!live.has(workerId)) continue;
      try {
        entries.push(JSON.parse(json) as RegistryEntry);
      } catch {
        // Not an entry this version can read: it lapses with its worker.
      }
    }
    return entries;
  }

  /** Queues (under this admin's prefix) and throttles with live declarations; see ThrottleAdmin.live. */
  async live(): Promise<LiveListing> {
    const entries = await this.liveEntries();
    const byThrottle = new Map<string, Set<string>>();
    for (const entry of entries) {
      for (const declaration of entry.declarations) {
        if (!byThrottle.has(declaration.name)) byThrottle.set(declaration.name, new Set());
        byThrottle.get(declaration.name)!.add(this.queueName(entry));
      }
    }
    return {
      // queueStats answers for queues under this admin's prefix.
      queues: [...new Set(entries.filter((entry) => entry.prefix === this.keys.prefix).map((entry) => entry.queue))].sort(),
      throttles: [...byThrottle].map(([name, queues]) => ({ name, queues: [...queues].sort() })).sort((a, b) => a.name.localeCompare(b.name)),
    };
  }

  /** The scheduler keys of an entry's queue, under the queue's own prefix, and bullmq's marker of it. */
  queueKeysOf(entry: RegistryEntry): QueueThrottleKeys & { marker: string } {
    const keys = new ThrottleKeys(entry.prefix, this.keys.namespace);
    return { ...keys.queue(entry.queue), marker: `${keys.bullmqBase(entry.queue)}marker` };
  }

  /** The scheduler keys of each queue the entries declare on, once each. */
  queuesOf(entries: readonly RegistryEntry[]) {
    const seen = new Map<string, ReturnType<LiveRegistry['queueKeysOf']>>();
    for (const entry of entries) {
      const q = this.queueKeysOf(entry);
      seen.set(q.base, q);
    }
    return [...seen.values()];
  }

  /** A queue as stats name it: its name, qualified with its prefix when that is not this admin's. */
  queueName(entry: RegistryEntry): string {
    return entry.prefix === this.keys.prefix ? entry.queue : `${entry.prefix}:${entry.queue}`;
  }

  async effective(name: string, entries: RegistryEntry[]): Promise<EffectiveThrottle> {
    this.mustBeDeclared(name, entries);
    return effectiveThrottle(entries, name);
  }

  mustBeDeclared(name: string, entries: readonly RegistryEntry[]): void {
    if (entriesDeclaring(entries, name).length > 0) return;
    const where = this.keys.namespace === this.keys.prefix
      ? `under prefix '${this.keys.prefix}': check the name and --prefix (or --throttle-prefix, when the workers set throttlePrefix)`
      : `in throttle namespace '${this.keys.namespace}': check the name and --throttle-prefix`;
    const declared = entries.flatMap((e) => e.declarations.map((d) => d.name));
    throw new UnknownThrottleError(`throttle '${name}' is not declared by any live ThrottledWorker ${where}.${suggestionText(name, declared, 'throttle')}`);
  }

  /** The throttle's effective declaration, when a live worker declares it. */
  declared(name: string, entries: readonly RegistryEntry[]): EffectiveThrottle | undefined {
    return entriesDeclaring(entries, name).length > 0 ? effectiveThrottle(entries, name) : undefined;
  }
}
