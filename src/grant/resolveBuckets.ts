import { InvalidGrantError } from '../errors/InvalidGrantError';
import { KeyValue } from '../declarations/Key';
import { Missing } from '../declarations/Missing';
import { encodeBucket, MISSING_KEY_BUCKET, UNKEYED_BUCKET } from '../keys/keyEncoding';
import { BucketRequest, Delivery, ThrottleSpec } from './types';

/** One bucket of one throttle, as the scripts see it. */
export interface ResolvedBucket {
  readonly throttle: ThrottleSpec;
  /** The encoded bucket segment of its keys. */
  readonly bucket: string;
}

function bucketOf(request: BucketRequest): string | undefined {
  const { throttle, key } = request;
  if (!throttle || typeof throttle.name !== 'string' || !Array.isArray(throttle.limits) || (throttle.limits.length === 0 && !throttle.tokenRate)) {
    throw new InvalidGrantError(
      `grant: ${JSON.stringify(throttle?.name ?? throttle)} is not a usable throttle; pass a Throttle with at least one limit, such as Throttle.named('stripe').limit(100, '1s').`,
    );
  }
  if (!throttle.keyParts) {
    if (key !== undefined && key !== null && key.length > 0) {
      throw new InvalidGrantError(`grant: throttle '${throttle.name}' has no key, but key ${JSON.stringify(key)} was given; leave key out.`);
    }
    return UNKEYED_BUCKET;
  }
  const missing = key === undefined || key === null || key.some((value) => value === undefined || value === null);
  if (missing) return throttle.missing === Missing.Unthrottled ? undefined : MISSING_KEY_BUCKET;
  if (key.length !== throttle.keyParts.length) {
    throw new InvalidGrantError(
      `grant: throttle '${throttle.name}' has a key of ${throttle.keyParts.length} part(s), but key ${JSON.stringify(key)} has ${key.length}; give one value per key part.`,
    );
  }
  return encodeBucket(key as readonly KeyValue[], throttle.name);
}

/** The buckets a delivery draws from, once each; a missing key under Missing.Unthrottled draws from none. */
export function resolveBuckets(delivery: Delivery): ResolvedBucket[] {
  if (!Array.isArray(delivery)) {
    throw new InvalidGrantError(`grant: a delivery is an array of { throttle, key } (got ${JSON.stringify(delivery)}).`);
  }
  const seen = new Set<string>();
  const buckets: ResolvedBucket[] = [];
  for (const request of delivery) {
    const bucket = bucketOf(request);
    if (bucket === undefined) continue;
    const id = `${request.throttle.name}\u0000${bucket}`;
    if (seen.has(id)) continue;
    seen.add(id);
    buckets.push({ throttle: request.throttle, bucket });
  }
  return buckets;
}
