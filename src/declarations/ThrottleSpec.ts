import { AdaptiveSpec } from './Adaptive';
import { CostSpec } from './Cost';
import { KeyPart } from './Key';
import { Limit } from './Limit';
import { Missing } from './Missing';
import { Rate } from './Rate';

/** What using a throttle needs of it: a Throttle declaration, or the EffectiveThrottle of several merged. */
export interface ThrottleSpec {
  /** The throttle's name: specs of one name count in one set of buckets. */
  readonly name: string;
  /** The window limits (see Throttle.limit), shortest window first. Empty when none is declared. */
  readonly limits: readonly Limit[];
  /** The parts of the key (see Throttle.key). Undefined for an unkeyed throttle: one bucket for every job. */
  readonly keyParts: readonly KeyPart[] | undefined;
  /** What a keyed throttle does with a job or delivery that lacks its key (see Throttle.whenKeyMissing). */
  readonly missing: Missing;
  /** A token bucket, if declared (see Throttle.rate). */
  readonly tokenRate?: Rate;
  /** At most this many jobs of a bucket in flight, if declared (see Throttle.concurrency). */
  readonly maxInFlight?: number;
  /** What a job counts instead of 1, if declared (see Throttle.cost). */
  readonly costSpec?: CostSpec;
  /** The limit that follows the API's 429s, if declared (see Throttle.adaptive). */
  readonly adaptiveSpec?: AdaptiveSpec;
  /** The longest a job may wait on the throttle's full buckets (ms), if declared (see Throttle.maxWait). */
  readonly maxWaitMs?: number;
}
