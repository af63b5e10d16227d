import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { Missing } from '../declarations/Missing';
import { costCapacity } from '../declarations/Cost';
import { encodeSegment } from '../keys/keyEncoding';
import type { FairnessSpec } from '../declarations/Fairness';
import type { KeyPart } from '../declarations/Key';
import type { RegistryEntry } from './registryEntry';

/**
 * A path segment that a JavaScript property lookup answers as a Lua table lookup does: not an array
 * index, not `length`, not a name an object or array inherits.
 */
function plainSegment(segment: string): boolean {
  return !/^\d+$/.test(segment) && segment !== 'length' && !(segment in Object.prototype) && !(segment in Array.prototype);
}

/**
 * The spec by which the delivery script classifies a queue's new jobs itself (lua/includes/classifyInLua),
 * or '' when only jobClassifier can: a throttle keys on an attribute or on a path a Lua lookup would
 * resolve differently (or a cost comes from an attribute, or such a path), or a live worker of the queue computes attributes (they are stored with each job
 * as it is first seen, so it must see every job). `queueEntries` are the queue's own registry entries.
 * Throttles come in the order their bucket ids sort.
 */
export function luaClassSpec(throttles: readonly EffectiveThrottle[], queueEntries: readonly RegistryEntry[], fairness?: FairnessSpec): string {
  // An entry that does not say (an older version's) may compute attributes.
  if (queueEntries.some((entry) => entry.attributes !== false)) return '';
  const luaKey = (parts: readonly KeyPart[]) => parts.every((part) => part.kind === 'name' || (part.kind === 'data' && part.path.split('.').every(plainSegment)));
  if (fairness && !luaKey(fairness.key)) return '';
  const usable = throttles.every((throttle) => luaKey(throttle.keyParts ?? [])
    && (!throttle.costSpec || (throttle.costSpec.source.kind === 'data' && throttle.costSpec.source.path.split('.').every(plainSegment))));
  if (!usable) return '';
  // Bucket ids "<name>=<bucket>" sort as "<name>=" do: encoded names hold no '='.
  const ordered = throttles
    .map((throttle) => {
      const encoded = encodeSegment(throttle.name);
      return { throttle, encoded, sortKey: `${encoded}=` };
    })
    .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
  const keySpec = (parts: readonly KeyPart[]) => parts.map((part) => (part.kind === 'data' ? ['data', ...part.path.split('.')] : ['name']));
  return JSON.stringify([
    ...ordered.map(({ throttle, encoded }) => ({
      n: encoded,
      ...(throttle.keyParts ? { k: keySpec(throttle.keyParts) } : {}),
      ...(throttle.missing === Missing.Unthrottled ? { u: true } : {}),
      ...costSpecOf(throttle),
    })),
    // The fairness key, last (lua/includes/classifyInLua.lua parseClassSpec takes it out).
    ...(fairness ? [{ f: keySpec(fairness.key), w: fairness.weights }] : []),
  ]);
}

/** Where the script reads a job's cost, its default and its bound (as src/queueState/jobCost.ts does). */
function costSpecOf(throttle: EffectiveThrottle): { c?: string[]; cd?: number; cm?: number } {
  const cost = throttle.costSpec;
  if (!cost || cost.source.kind !== 'data') return {};
  const capacity = costCapacity(throttle);
  return {
    c: ['data', ...cost.source.path.split('.')],
    ...(cost.default !== undefined ? { cd: cost.default } : {}),
    ...(Number.isFinite(capacity) ? { cm: capacity } : {}),
  };
}
