import { InvalidThrottleError } from '../errors/InvalidThrottleError';

/**
 * One part of a throttle's key: where its value comes from (`Key.data`, `Key.name`, `Key.attribute`, or
 * `Key.fairness`: the worker's fairness key in its place).
 */
export type KeyPart =
  | {
    /** The value is read from job.data. */
    readonly kind: 'data';
    /** The dotted path into job.data, such as 'customer' or 'account.id'. */
    readonly path: string;
  }
  | {
    /** The value is the job's name. */
    readonly kind: 'name';
  }
  | {
    /** The value is an attribute the worker's `attributes` function computes once per job. */
    readonly kind: 'attribute';
    /** The attribute's name. */
    readonly name: string;
  }
  | {
    /** The parts of the queue's fairness key (ThrottledWorker's `fairness` option), put in by the worker. */
    readonly kind: 'fairness';
  };

/** A key value as it reaches a bucket: one scalar per key part. */
export type KeyValue = string | number | boolean;

/**
 * Builds the parts of a throttle's key, for `Throttle.key`. Jobs with the same values of every part share a
 * bucket. Several parts make one composite key.
 *
 * @example
 * Throttle.named('reports').key([Key.data('tenant'), Key.name()]).limit(2, '1s');
 */
export const Key = {
  /**
   * A dotted path into job.data; the value there must be a string, number or boolean.
   *
   * @param path - A non-empty dotted path, such as 'customer' or 'account.id'.
   * @returns A frozen key part.
   * @throws InvalidThrottleError when the path is empty or has an empty segment ('a..b').
   */
  data(path: string): KeyPart {
    if (typeof path !== 'string' || path.length === 0 || path.split('.').some((segment) => segment.length === 0)) {
      throw new InvalidThrottleError(
        `Key.data(${JSON.stringify(path)}): the path must be a non-empty dotted path into job.data such as 'customer' or 'account.id'.`,
      );
    }
    return Object.freeze({ kind: 'data', path });
  },
  /** The job's name. */
  name(): KeyPart {
    return Object.freeze({ kind: 'name' });
  },
  /**
   * An attribute computed once per job by the worker's `attributes` function.
   *
   * @param name - The attribute's name, not empty.
   * @returns A frozen key part.
   * @throws InvalidThrottleError when the name is empty or not a string.
   */
  attribute(name: string): KeyPart {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidThrottleError(`Key.attribute(${JSON.stringify(name)}): the attribute name must be a non-empty string.`);
    }
    return Object.freeze({ kind: 'attribute', name });
  },
  /**
   * The queue's fairness key (ThrottledWorker's `fairness` option) in its place: a throttle keyed by it has a bucket
   * per fairness group, as `Throttle.named('stripe-per-tenant').key([Key.fairness()]).limit(40, '1s')`. The worker
   * puts its fairness key's parts in; a worker without the option refuses such a throttle. A `Grantor` takes its
   * values as given, as any part's.
   */
  fairness(): KeyPart {
    return Object.freeze({ kind: 'fairness' });
  },
};

export function describeKeyPart(part: KeyPart): string {
  switch (part.kind) {
    case 'data': return `Key.data(${JSON.stringify(part.path)})`;
    case 'name': return 'Key.name()';
    case 'attribute': return `Key.attribute(${JSON.stringify(part.name)})`;
    case 'fairness': return 'Key.fairness()';
  }
}

export function describeKey(parts: readonly KeyPart[] | undefined): string {
  return parts ? `[${parts.map(describeKeyPart).join(', ')}]` : 'no key';
}

export function sameKey(a: readonly KeyPart[] | undefined, b: readonly KeyPart[] | undefined): boolean {
  return describeKey(a) === describeKey(b);
}
