import { KeyValue } from '../declarations/Key';
import { ThrottleSpec } from '../declarations/ThrottleSpec';

export type { ThrottleSpec };

/** One bucket a delivery draws from: an unkeyed throttle, or a keyed one with its key values (absent = missing). */
export interface BucketRequest {
  /**
   * The throttle: a `Throttle` declaration or a merged `EffectiveThrottle`. It needs a window limit or a rate,
   * and no concurrency (a grant has no end to count it to).
   */
  readonly throttle: ThrottleSpec;
  /**
   * The key values, one per key part in order (string, number or boolean). Left out, null, or with a null or
   * undefined value: the key is missing, and the throttle's missing-key policy applies. Leave it out (or empty)
   * for an unkeyed throttle.
   * @default undefined
   */
  readonly key?: readonly (KeyValue | null | undefined)[] | null;
  /**
   * Tokens the delivery takes from this bucket, in every limit of its throttle (LLM tokens, bytes...): a positive
   * whole number, at most the throttle's smallest N and its rate's burst. A cost declared with Throttle.cost is
   * ignored here. A bucket named twice in one delivery takes both costs.
   * @default 1
   */
  readonly cost?: number;
}

/** One delivery: every bucket it draws from, granted together or not at all. */
export type Delivery = readonly BucketRequest[];

/** What a grant decided for one delivery: granted with an id, or refused with the time it could fit. */
export type GrantResult =
  | {
    /** The delivery was granted: its tokens are counted in every bucket it draws from. */
    readonly granted: true;
    /** The token id: pass it to `Grantor.returnTokens` to give the tokens back. Any process can return it. */
    readonly id: string;
    /** When it was granted, in ms since the Unix epoch on the Redis clock. */
    readonly grantedAt: number;
  }
  | {
    /** The delivery was refused: nothing was counted for it. */
    readonly granted: false;
    /**
     * The earliest time it could fit given what is counted now, in ms since the Unix epoch on the Redis clock.
     * Other grants meanwhile can push it later.
     */
    readonly retryAt: number;
  };
