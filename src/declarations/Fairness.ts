import { InvalidOptionError } from '../errors/InvalidOptionError';
import { ThrottleConflictError } from '../errors/ThrottleConflictError';
import { encodeBucket } from '../keys/keyEncoding';
import { describeKey, KeyPart, KeyValue, sameKey } from './Key';

/**
 * ThrottledWorker's `fairness` option: the queue's jobs are grouped by a key (a tenant), and whenever jobs of
 * several groups could go, they take turns in proportion to their weights (in job costs), whatever order they
 * were added in.
 *
 * @example
 * new ThrottledWorker('orders', processor, { connection, fairness: { key: Key.data('tenant'), weights: { bigco: 3 } }, throttles });
 */
export interface FairnessOptions {
  /** What groups the jobs: one key part or several, as a throttle's key (`Key.data`, `Key.name`, `Key.attribute`). */
  readonly key: KeyPart | readonly KeyPart[];
  /**
   * Each group's weight by its key value (a one-part key; for several parts, the values as a JSON array text), a
   * positive number; groups not named weigh 1. `ThrottleAdmin.setFairnessWeight` sets one at run time.
   * @default {} (every group weighs 1)
   */
  readonly weights?: Readonly<Record<string, number>>;
}

/** A queue's fairness as it travels through the registry: the key parts, and the declared weights by group segment. */
export interface FairnessSpec {
  /** The key parts that name a job's group. */
  readonly key: readonly KeyPart[];
  /** Declared weights by group segment (a bucket's segment of the key values: src/keys/keyEncoding.ts encodeBucket). */
  readonly weights: Readonly<Record<string, number>>;
}

/** The group segment of key values, as a bucket's (src/keys/keyEncoding.ts encodeBucket). */
export function groupSegment(values: readonly KeyValue[], queue: string): string {
  return encodeBucket(values, `fairness of '${queue}'`);
}

/** Checks the option; returns the spec the worker registers. */
export function checkFairness(queue: string, options: FairnessOptions): FairnessSpec {
  const where = `ThrottledWorker('${queue}'): fairness`;
  const parts = Array.isArray(options?.key) ? [...(options.key as readonly KeyPart[])] : options?.key ? [options.key as KeyPart] : [];
  if (parts.length === 0 || parts.some((part) => !part || !['data', 'name', 'attribute'].includes(part.kind))) {
    throw new InvalidOptionError(`${where}.key must be a Key part or several, such as { key: Key.data('tenant') }.`);
  }
  const weights: Record<string, number> = {};
  for (const [name, weight] of Object.entries(options.weights ?? {})) {
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
      throw new InvalidOptionError(`${where}.weights.${name} is ${String(weight)}: a weight must be a positive number, such as { ${JSON.stringify(name)}: 3 } (groups not named weigh 1).`);
    }
    let values: KeyValue[] = [name];
    if (parts.length > 1) {
      try {
        values = JSON.parse(name) as KeyValue[];
      } catch {
        values = [];
      }
      if (!Array.isArray(values) || values.length !== parts.length) {
        throw new InvalidOptionError(`${where}.weights: '${name}' must name a group of its ${parts.length}-part key as a JSON array of its values, such as '["acme","eu"]'.`);
      }
    }
    weights[groupSegment(values, queue)] = weight;
  }
  return Object.freeze({ key: Object.freeze(parts), weights: Object.freeze(weights) });
}

/**
 * The fairness every live worker of a queue declares: the same key from each (or none from any), the weights they
 * name together. ThrottleConflictError when they differ.
 */
export function mergeFairness(queue: string, specs: readonly (FairnessSpec | undefined)[]): FairnessSpec | undefined {
  const declared = specs.filter((spec): spec is FairnessSpec => spec !== undefined);
  if (declared.length === 0) return undefined;
  if (declared.length < specs.length) {
    throw new ThrottleConflictError(`Queue '${queue}': some of its workers declare fairness by ${describeKey(declared[0].key)} and others none: every worker of a queue must declare the same fairness key, or none.`);
  }
  const weights: Record<string, number> = {};
  for (const spec of declared) {
    if (!sameKey(spec.key, declared[0].key)) {
      throw new ThrottleConflictError(`Queue '${queue}': its workers declare fairness by ${describeKey(declared[0].key)} and by ${describeKey(spec.key)}: every worker of a queue must declare the same fairness key.`);
    }
    for (const [group, weight] of Object.entries(spec.weights)) {
      if (weights[group] !== undefined && weights[group] !== weight) {
        throw new ThrottleConflictError(`Queue '${queue}': its workers declare the fairness weight of group ${group} as ${weights[group]} and as ${weight}: declare one weight, or set it at run time with ThrottleAdmin.setFairnessWeight.`);
      }
      weights[group] = weight;
    }
  }
  return { key: declared[0].key, weights };
}
