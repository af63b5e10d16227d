import { KeyValue } from '../declarations/Key';
import { ThrottleSpec } from '../declarations/ThrottleSpec';

export type { ThrottleSpec };

/** One bucket a delivery draws from: an unkeyed throttle, or a keyed one with its key values (absent = missing). */
export interface BucketRequest {
  readonly throttle: ThrottleSpec;
  readonly key?: readonly (KeyValue | null | undefined)[] | null;
  /** Tokens the delivery takes from this bucket, in every limit of its throttle (1 unless given: LLM tokens, bytes...). */
  readonly cost?: number;
}

/** One delivery: every bucket it draws from, granted together or not at all. */
export type Delivery = readonly BucketRequest[];

export type GrantResult =
  | { readonly granted: true; readonly id: string; readonly grantedAt: number }
  | { readonly granted: false; readonly retryAt: number };
