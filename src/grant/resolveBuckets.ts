import { InvalidGrantError } from '../errors/InvalidGrantError';
import { KeyValue } from '../declarations/Key';
import { hasLimits, limitsOf, unknownKind } from '../declarations/LimitSpec';
import { Missing } from '../declarations/Missing';
import { encodeBucket, MISSING_KEY_BUCKET, UNKEYED_BUCKET } from '../keys/keyEncoding';
import { BucketRequest, Delivery, ThrottleSpec } from './types';

/** One bucket of one throttle, as the scripts see it. */
export interface ResolvedBucket {
  readonly throttle: ThrottleSpec;
  /** The encoded bucket segment of its keys. */
  readonly bucket: string;
  /** The tokens the delivery takes from it (its cost; 1 unless the request said). */
  readonly cost: number;
}

/** A request's cost: a positive whole number. */
function costOf(request: BucketRequest): number {
  const { throttle, cost } = request;
  if (cost === undefined) return 1;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new InvalidGrantError(`grant: cost ${String(cost)} for throttle '${throttle.name}' must be a positive whole number of tokens (1 unless given).`);
  }
  return cost;
}

/** A cost every limit of the throttle could ever grant (more than its N, or than its rate's burst, never fits). */
function assertCanFit(throttle: ThrottleSpec, cost: number): void {
  const smallest = limitsOf(throttle).flatMap((limit) => {
    switch (limit.kind) {
      case 'window': return [{ n: limit.max, what: `limit ${limit.max} per ${limit.windowMs} ms` }];
      case 'rate': return [{ n: limit.rate.burst, what: `burst ${limit.rate.burst} of its rate` }];
      // A grant does not count a concurrency (assertGrantable refuses one).
      case 'concurrency': return [];
      default: return unknownKind(limit);
    }
  }).sort((a, b) => a.n - b.n)[0];
  if (smallest && cost > smallest.n) {
    throw new InvalidGrantError(`grant: cost ${cost} for throttle '${throttle.name}' exceeds its ${smallest.what}: it could never be granted. Split the work, or raise the limit.`);
  }
}

function bucketOf(request: BucketRequest): string | undefined {
  const { throttle, key } = request;
  if (!throttle || typeof throttle.name !== 'string' || !Array.isArray(throttle.limits) || !hasLimits(throttle)) {
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

/** The buckets a delivery draws from, once each (a bucket named twice costs both); a missing key under Missing.Unthrottled draws from none. */
export function resolveBuckets(delivery: Delivery): ResolvedBucket[] {
  if (!Array.isArray(delivery)) {
    throw new InvalidGrantError(`grant: a delivery is an array of { throttle, key } (got ${JSON.stringify(delivery)}).`);
  }
  const byId = new Map<string, ResolvedBucket>();
  for (const request of delivery) {
    const bucket = bucketOf(request);
    if (bucket === undefined) continue;
    const cost = costOf(request);
    const id = `${request.throttle.name}\u0000${bucket}`;
    // A bucket named twice takes both costs.
    const known = byId.get(id);
    byId.set(id, { throttle: request.throttle, bucket, cost: (known?.cost ?? 0) + cost });
  }
  for (const { throttle, cost } of byId.values()) assertCanFit(throttle, cost);
  return [...byId.values()];
}

/** Grantor's own check: a concurrency counts jobs between delivery and their end, which a grant does not have. */
export function assertGrantable(delivery: Delivery): void {
  for (const { throttle } of Array.isArray(delivery) ? delivery : []) {
    if (throttle?.maxInFlight !== undefined) {
      throw new InvalidGrantError(
        `grant: throttle '${throttle.name}' declares concurrency(${throttle.maxInFlight}), which counts jobs a ThrottledWorker runs; a Grantor grant has no end to count it to. Grant from a throttle without concurrency(), or deliver through ThrottledWorker.`,
      );
    }
  }
}
