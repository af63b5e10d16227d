import { limitsOf, unknownKind } from '../declarations/LimitSpec';
import { Rate, stricterRate } from '../declarations/Rate';
import { ThrottleSpec } from '../declarations/ThrottleSpec';
import { ThrottleKeys } from '../keys/ThrottleKeys';
import { encodeSegment } from '../keys/keyEncoding';
import { GrantCounter } from '../lua/calls/grantDeliveries';
import { GrantedWindow } from './grantMemory';
import { assertGrantable, resolveBuckets } from './resolveBuckets';
import { TokenRecord } from './tokenId';
import { Delivery } from './types';

/** A batch of deliveries as one grant call asks for them, and what each one would count where. */
export interface GrantBatchPlan {
  /** Each counter once, in the order the draws refer to them (1-based). */
  readonly counters: GrantCounter[];
  /** Per delivery: the counters it draws from, with its cost in each. */
  readonly draws: { counter: number; cost: number }[][];
  /** Per delivery: what its token id carries (tokenId.ts). */
  readonly records: TokenRecord['throttles'][];
  /** Per delivery: the window counters it counts in, for the Grantor's memory (grantMemory.ts). */
  readonly windowsOf: GrantedWindow[][];
  /** Every throttle the batch draws from. */
  readonly throttles: Set<ThrottleSpec>;
}

/**
 * Resolves each delivery's buckets and names every counter once: two specs of one throttle in a batch share its
 * counters, the stricter N (or rate) holding for both.
 *
 * @throws InvalidGrantError as resolveBuckets and assertGrantable; nothing is granted then.
 */
export function planGrantBatch(keys: ThrottleKeys, deliveries: readonly Delivery[]): GrantBatchPlan {
  const counterIndex = new Map<string, number>();
  const counters: GrantCounter[] = [];
  const ratesAt = new Map<number, Rate>();
  // A counter's 1-based index, the counter added the first time it is named.
  const counterAt = (counter: GrantCounter): number => {
    let index = counterIndex.get(counter.key);
    if (index === undefined) {
      counters.push(counter);
      index = counters.length;
      counterIndex.set(counter.key, index);
    }
    return index;
  };
  const draws: { counter: number; cost: number }[][] = [];
  const records: TokenRecord['throttles'][] = [];
  const windowsOf: GrantedWindow[][] = [];
  const throttles = new Set<ThrottleSpec>();
  for (const delivery of deliveries) {
    assertGrantable(delivery);
    const buckets = resolveBuckets(delivery);
    const drawn: { counter: number; cost: number }[] = [];
    const record: TokenRecord['throttles'][number][] = [];
    const windows: GrantedWindow[] = [];
    for (const { throttle, bucket, cost } of buckets) {
      throttles.add(throttle);
      const bucketId = `${encodeSegment(throttle.name)}=${bucket}`;
      for (const limit of limitsOf(throttle)) {
        switch (limit.kind) {
          case 'window': {
            windows.push({ bucketId, max: limit.max, windowMs: limit.windowMs, cost });
            const key = keys.windowCounter(throttle.name, bucket, limit.windowMs);
            const index = counterAt({ key, window: { max: limit.max, windowMs: limit.windowMs } });
            // Two specs of one throttle in one batch: the stricter N holds for both.
            const { window } = counters[index - 1] as Extract<GrantCounter, { window: unknown }>;
            counters[index - 1] = { key, window: { max: Math.min(window.max, limit.max), windowMs: window.windowMs } };
            drawn.push({ counter: index, cost });
            break;
          }
          case 'rate': {
            const key = keys.rateCounter(throttle.name, bucket);
            const index = counterAt({ key, rate: limit.rate });
            // Two specs of one throttle in one batch: the stricter rate holds for both.
            const rate = stricterRate(ratesAt.get(index), limit.rate)!;
            ratesAt.set(index, rate);
            counters[index - 1] = { key, rate };
            drawn.push({ counter: index, cost });
            break;
          }
          case 'concurrency':
            // Never counted by a grant: assertGrantable refuses a throttle with one (a grant has no end to count it to).
            break;
          default:
            unknownKind(limit);
        }
      }
      record.push({ name: throttle.name, bucket, windows: throttle.limits.map((limit) => limit.windowMs), ...(cost > 1 ? { count: cost } : {}) });
    }
    draws.push(drawn);
    records.push(record);
    windowsOf.push(windows);
  }
  return { counters, draws, records, windowsOf, throttles };
}
