import { ThrottleKeys } from '../keys/ThrottleKeys';

/** Tokens of one grant in one bucket of one throttle, to stop counting in its window limits. */
export interface ReturnedGrant {
  /** The throttle's name (not encoded) and the bucket's segment. */
  readonly name: string;
  readonly bucket: string;
  /** Makes a second return of the same grant a no-op (the throttle's returned-set). */
  readonly nonce: string;
  readonly grantUs: number;
  readonly leaseMs: number;
  /** The tokens the grant took (its cost). */
  readonly count: number;
  /** The windows (ms) it was counted in. A rate keeps returned tokens counted (lua/includes/rateCounter.lua). */
  readonly windows: readonly number[];
}

/** lua/returnTokens-n.lua's KEYS and ARGV for these grants, each key named once. */
export function returnTokensCall(keys: ThrottleKeys, grants: readonly ReturnedGrant[]): { keys: string[]; args: (string | number)[] } {
  const keyIndex = new Map<string, number>();
  const callKeys: string[] = [];
  const indexOf = (key: string): number => {
    let index = keyIndex.get(key);
    if (index === undefined) {
      callKeys.push(key);
      index = callKeys.length;
      keyIndex.set(key, index);
    }
    return index;
  };
  const args: (string | number)[] = [grants.length];
  for (const grant of grants) {
    args.push(indexOf(keys.returnedTokens(grant.name)), grant.nonce, grant.grantUs, grant.leaseMs, grant.count, grant.windows.length);
    for (const windowMs of grant.windows) args.push(indexOf(keys.windowCounter(grant.name, grant.bucket, windowMs)), windowMs);
  }
  return { keys: callKeys, args };
}
