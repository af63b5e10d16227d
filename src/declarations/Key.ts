import { InvalidThrottleError } from '../errors/InvalidThrottleError';

/** One part of a throttle's key: where its value comes from. */
export type KeyPart =
  | { readonly kind: 'data'; readonly path: string }
  | { readonly kind: 'name' }
  | { readonly kind: 'attribute'; readonly name: string };

/** A key value as it reaches a bucket: one scalar per key part. */
export type KeyValue = string | number | boolean;

export const Key = {
  /** A dotted path into job.data; the value there must be a string, number or boolean. */
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
  /** An attribute computed once per job by the worker's `attributes` function. */
  attribute(name: string): KeyPart {
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidThrottleError(`Key.attribute(${JSON.stringify(name)}): the attribute name must be a non-empty string.`);
    }
    return Object.freeze({ kind: 'attribute', name });
  },
};

export function describeKeyPart(part: KeyPart): string {
  switch (part.kind) {
    case 'data': return `Key.data(${JSON.stringify(part.path)})`;
    case 'name': return 'Key.name()';
    case 'attribute': return `Key.attribute(${JSON.stringify(part.name)})`;
  }
}

export function describeKey(parts: readonly KeyPart[] | undefined): string {
  return parts ? `[${parts.map(describeKeyPart).join(', ')}]` : 'no key';
}

export function sameKey(a: readonly KeyPart[] | undefined, b: readonly KeyPart[] | undefined): boolean {
  return describeKey(a) === describeKey(b);
}
