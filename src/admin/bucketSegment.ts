import { describeKeyPart, KeyValue } from '../declarations/Key';
import { EffectiveThrottle } from '../declarations/mergeDeclarations';
import { InvalidGrantError } from '../errors/InvalidGrantError';
import { encodeBucket, MISSING_KEY_BUCKET, UNKEYED_BUCKET } from '../keys/keyEncoding';

/**
 * The bucket segment of `key` for a throttle (its effective declaration, when a live worker declares it): ''
 * for the throttle's '*'. A key of the wrong shape is an error that names the shape.
 */
export function bucketSegmentOf(name: string, throttle: EffectiveThrottle | undefined, key: readonly KeyValue[] | null | undefined): string {
  if (key === undefined) return '*';
  if (throttle && !throttle.keyParts) {
    if (key && key.length > 0) throw new InvalidGrantError(`throttle '${name}' has no key, so it has one bucket: leave the key values out.`);
    return UNKEYED_BUCKET;
  }
  if (key === null || key.length === 0) return MISSING_KEY_BUCKET;
  if (throttle?.keyParts && key.length !== throttle.keyParts.length) {
    throw new InvalidGrantError(`throttle '${name}' has a key of ${throttle.keyParts.length} part(s) (${throttle.keyParts.map(describeKeyPart).join(', ')}), but ${key.length} value(s) were given.`);
  }
  return encodeBucket(key, name);
}
