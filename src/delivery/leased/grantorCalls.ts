import { ScriptRunner } from '../../lua/scripts';
import { ReturnGroup } from './takeLeasedJobs';

/** Where the namespace's grantor is: the connection that reaches its slot, and the keys that name it. */
export interface GrantorTarget {
  readonly runner: ScriptRunner;
  /** Any key of the namespace (it routes the call to the namespace's slot). */
  readonly slotKey: string;
  readonly throttlePrefix: string;
}

export interface LeaseRequest {
  readonly member: string;
  readonly bucketIds: readonly string[];
  readonly count: number;
}

export interface LeaseAnswer {
  grantUs: number;
  /** Per request: tokens granted, and when more would fit (ms; 0: all granted; -1: a throttle is not declared). */
  results: { granted: number; roomInMs: number }[];
}

/** Asks the grantor for tokens (lua/leaseTokens-1.lua): each request's tokens granted together, against W + h. */
export async function leaseTokens(grantor: GrantorTarget, leaseMs: number, requests: readonly LeaseRequest[]): Promise<LeaseAnswer> {
  const args: (string | number)[] = [grantor.throttlePrefix, leaseMs, requests.length];
  for (const request of requests) args.push(request.count, request.bucketIds.length, ...request.bucketIds);
  const reply = (await grantor.runner.run('leaseTokens', [grantor.slotKey], args)) as number[];
  return {
    grantUs: Number(reply[0]),
    results: requests.map((_, i) => ({ granted: Number(reply[1 + 2 * i]), roomInMs: Number(reply[2 + 2 * i]) })),
  };
}

/** Gives tokens back (lua/returnLeasedTokens-1.lua); resolves to how many stopped counting. */
export async function returnLeasedTokens(grantor: GrantorTarget, groups: readonly ReturnGroup[]): Promise<number> {
  if (groups.length === 0) return 0;
  const args: (string | number)[] = [grantor.throttlePrefix, groups.length];
  for (const g of groups) args.push(g.bucketId, g.grantUs, g.leaseMs, g.nonce, g.count);
  const reply = (await grantor.runner.run('returnLeasedTokens', [grantor.slotKey], args)) as number[];
  return Number(reply[1]);
}
