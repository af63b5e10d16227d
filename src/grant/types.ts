import { KeyPart, KeyValue } from '../declarations/Key';
import { Limit } from '../declarations/Limit';
import { Missing } from '../declarations/Missing';

/** What a grant needs of a throttle: a Throttle declaration, or the EffectiveThrottle of several merged. */
export interface ThrottleSpec {
  readonly name: string;
  readonly limits: readonly Limit[];
  readonly keyParts: readonly KeyPart[] | undefined;
  readonly missing: Missing;
}

/** One bucket a delivery draws from: an unkeyed throttle, or a keyed one with its key values (absent = missing). */
export interface BucketRequest {
  readonly throttle: ThrottleSpec;
  readonly key?: readonly (KeyValue | null | undefined)[] | null;
}

/** One delivery: every bucket it draws from, granted together or not at all. */
export type Delivery = readonly BucketRequest[];

export type GrantResult =
  | { readonly granted: true; readonly id: string; readonly grantedAt: number }
  | { readonly granted: false; readonly retryAt: number };
