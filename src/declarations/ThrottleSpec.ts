import { CostSpec } from './Cost';
import { KeyPart } from './Key';
import { Limit } from './Limit';
import { Missing } from './Missing';
import { Rate } from './Rate';

/** What using a throttle needs of it: a Throttle declaration, or the EffectiveThrottle of several merged. */
export interface ThrottleSpec {
  readonly name: string;
  readonly limits: readonly Limit[];
  readonly keyParts: readonly KeyPart[] | undefined;
  readonly missing: Missing;
  /** A token bucket, if declared (see Throttle.rate). */
  readonly tokenRate?: Rate;
  /** At most this many jobs of a bucket in flight, if declared (see Throttle.concurrency). */
  readonly maxInFlight?: number;
  /** What a job counts instead of 1, if declared (see Throttle.cost). */
  readonly costSpec?: CostSpec;
}
