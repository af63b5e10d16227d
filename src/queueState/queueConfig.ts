import { createHash } from 'node:crypto';
import { describeCost } from '../declarations/Cost';
import { describeKey } from '../declarations/Key';
import { EffectiveThrottle, mergeDeclarations } from '../declarations/mergeDeclarations';
import { luaClassSpec } from './luaClassSpec';
import { FairnessSpec, mergeFairness } from '../declarations/Fairness';
import { checkRateLease, rateStartDeadlineMs } from '../declarations/validateLimits';
import type { RegistryEntry } from './registryEntry';

/** What applies to one queue: every throttle any of its live workers declares, each merged across all queues. */
export interface QueueConfig {
  /** Changes exactly when the throttles' names, keys or missing-key policies change (not their limits). */
  readonly gen: string;
  readonly throttles: readonly EffectiveThrottle[];
  /** How the delivery script classifies new jobs itself, or '' when the workers must (see luaClassSpec). */
  readonly luaSpec: string;
  /** The queue's fairness key and declared weights, when its workers declare one (mergeFairness). */
  readonly fairness?: FairnessSpec;
}

export function configGeneration(throttles: readonly EffectiveThrottle[]): string {
  // A job's class holds its cost: a different cost source classifies jobs again.
  const shape = throttles.map((t) => (t.costSpec ? [t.name, describeKey(t.keyParts), t.missing, describeCost(t.costSpec)] : [t.name, describeKey(t.keyParts), t.missing]));
  return createHash('sha1').update(JSON.stringify(shape)).digest('hex').slice(0, 10);
}

/** The entries of the workers that declare the throttle `name`. */
export function entriesDeclaring<E extends RegistryEntry>(entries: readonly E[], name: string): E[] {
  return entries.filter((entry) => entry.declarations.some((d) => d.name === name));
}

/** Every declaration of `name` in the registry, merged (throws ThrottleConflictError on a different key). */
export function effectiveThrottle(entries: readonly RegistryEntry[], name: string): EffectiveThrottle {
  const declaring = entriesDeclaring(entries, name);
  const merged = mergeDeclarations(declaring.flatMap((entry) => entry.declarations.filter((d) => d.name === name)));
  if (!merged.tokenRate) return merged;
  const leased = Math.max(0, ...declaring.filter((e) => e.delivery === 'leased').map((e) => e.leaseMs ?? 0));
  checkRateLease(name, merged.tokenRate, leased);
  // An exact worker's processors start up to its start deadline after their grant: the rate is granted that much
  // short of its burst (rateStartDeadlineMs). Beside a leased worker, a throttle with a cost keeps its burst for
  // costly jobs (the pools' tokens are checked clamped, lua/includes/rateCounter.lua): the leased lease alone
  // gives exact jobs their deadline there.
  const alone = !declaring.some((e) => e.delivery === 'leased');
  const exact = merged.costSpec && !alone ? 0 : Math.max(0, ...declaring.filter((e) => e.delivery !== 'leased').map((e) => rateStartDeadlineMs(merged.tokenRate!, e.leaseMs ?? 0, alone)));
  return Object.freeze({ ...merged, rateLeaseMs: Math.max(leased, exact), rateLeasedMs: leased });
}

/** The registry's entries for one queue: its name under its bullmq prefix. */
export function entriesOfQueue(entries: readonly RegistryEntry[], queue: string, prefix: string): RegistryEntry[] {
  return entries.filter((e) => e.queue === queue && e.prefix === prefix);
}

export function queueConfigFrom(entries: readonly RegistryEntry[], queue: string, prefix: string): QueueConfig {
  const mine = entriesOfQueue(entries, queue, prefix);
  const names = new Set(mine.flatMap((e) => e.declarations.map((d) => d.name)));
  const throttles = [...names].sort().map((name) => effectiveThrottle(entries, name));
  const fairness = mergeFairness(queue, mine.map((entry) => entry.fairness));
  return { gen: configGeneration(throttles), throttles, luaSpec: luaClassSpec(throttles, mine, fairness), ...(fairness ? { fairness } : {}) };
}
