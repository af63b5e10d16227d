import type { BucketUnits } from '../../delivery/leased/concurrencyHolds';
import { ScriptCallSpec, ScriptRunner } from '../scripts';
import { CallConfirmation, fixedCall, fixedKeysScript, flagArg, ScriptArg } from './scriptCall';

/**
 * lua/leaseTokens-1.lua, the namespace's grantor: leases tokens for deliveries that queues in other slots (or on other
 * Redis servers) will spend, each request's tokens granted together or not at all, against W + h. Its call goes
 * through ReplicaConfirmation (a deposed grantor's grants must not be spent).
 */
export const leaseTokensScript = fixedKeysScript('leaseTokens', ['slot']);

/** The reply's status. */
export enum LeaseTokensStatus {
  /** Every request was decided. */
  Decided = 0,
  /** Nothing granted: report what the queue delivered lately first (lua/reportQueueHistory-1.lua). */
  Report = 1,
  /** Nothing granted: other queues have not reported yet (roomInMs says when to ask again). */
  Wait = 2,
}

/** A request's roomInMs when a throttle of it has no published limits (no live worker declares it): nothing granted. */
export const NO_PUBLISHED_LIMITS = -1;

export interface LeaseTokensRequest {
  /** n wanted: each takes its cost in tokens from every bucket. */
  readonly count: number;
  /** Leased ahead for a flowing class (its pool ran low), not for held jobs. */
  readonly refill: boolean;
  /** Each bucket's id ("<encoded throttle>=<bucket>"), followed by "$<cost>" for a cost other than 1. */
  readonly buckets: readonly string[];
}

export interface LeaseTokensInput {
  /** KEYS[1]: the namespace's registry version key (any key of the namespace: it names the slot). */
  readonly slot: string;
  readonly throttlePrefix: string;
  /** h, the asking worker's lease (ms). */
  readonly leaseMs: number;
  /** The asking queue's id (prefix:queue). */
  readonly queueId: string;
  readonly durableRedis: boolean;
  /** The asking worker's id: the holder of its concurrency units. */
  readonly holder: string;
  /** A hold's lifetime (ms). */
  readonly holdMs: number;
  /** The grantor's node identity the worker saw recorded ('' for none). */
  readonly knownNodeId: string;
  /** Units of each bucket's concurrency the worker holds and has free. */
  readonly credit: readonly BucketUnits[];
  readonly requests: readonly LeaseTokensRequest[];
}

export interface LeaseTokensReply {
  /** The grantor's clock (us) at the grant. */
  grantUs: number;
  status: LeaseTokensStatus;
  /** Per request, in order. */
  results: {
    /** Deliveries granted (0..n). */
    granted: number;
    /** When fewer than n were granted, how long until one more would fit (at least 1); 0 when all were; NO_PUBLISHED_LIMITS. */
    roomInMs: number;
    /** The bucket id whose room comes last ('' when all were granted). */
    lacking: string;
    /** Units added to the worker's hold, by bucket id. */
    held: BucketUnits[];
  }[];
}

export function leaseTokensCall(input: LeaseTokensInput): ScriptCallSpec {
  const args: ScriptArg[] = [
    input.throttlePrefix, input.leaseMs, input.queueId, flagArg(input.durableRedis), input.holder, input.holdMs, input.knownNodeId,
  ];
  args.push(input.credit.length, ...input.credit.flat(), input.requests.length);
  for (const request of input.requests) args.push(request.count, flagArg(request.refill), request.buckets.length, ...request.buckets);
  return fixedCall(leaseTokensScript, { slot: input.slot }, args);
}

/** Fixed ARGV before the credit pairs (leaseTokensCall's first push). */
const FIXED_ARGS = 7;

/**
 * The requests a leaseTokens call's ARGV carries, read back as leaseTokensCall wrote them: for instruments that watch
 * the calls sent (the benchmarks count tokens asked and granted), so that a change of layout changes them too.
 */
export function leaseTokensRequestsOf(args: readonly unknown[]): LeaseTokensRequest[] {
  const requests: LeaseTokensRequest[] = [];
  const requestsAt = FIXED_ARGS + 1 + 2 * Number(args[FIXED_ARGS]);
  let at = requestsAt + 1;
  for (let d = 0; d < Number(args[requestsAt]); d++) {
    const buckets = Number(args[at + 2]);
    requests.push({ count: Number(args[at]), refill: String(args[at + 1]) === '1', buckets: args.slice(at + 3, at + 3 + buckets).map(String) });
    at += 3 + buckets;
  }
  return requests;
}

/** Asks the grantor; the reply is answered once a replica holds what it granted (a deposed grantor's grants must not be spent). */
export function runLeaseTokens(runner: ScriptRunner, input: LeaseTokensInput, confirmation: CallConfirmation): Promise<LeaseTokensReply> {
  return confirmation.run(runner, leaseTokensCall(input), grantedAnyToken(input.requests.length))
    .then((raw) => parseLeaseTokensReply(raw, input.requests));
}

export function parseLeaseTokensReply(raw: unknown, requests: readonly LeaseTokensRequest[]): LeaseTokensReply {
  const reply = raw as (number | string)[];
  const status = Number(reply[1]);
  return {
    grantUs: Number(reply[0]),
    status: status === LeaseTokensStatus.Report ? LeaseTokensStatus.Report : status === LeaseTokensStatus.Wait ? LeaseTokensStatus.Wait : LeaseTokensStatus.Decided,
    results: requests.map((request, i) => ({
      granted: Number(reply[2 + 4 * i]), roomInMs: Number(reply[3 + 4 * i]), lacking: String(reply[4 + 4 * i] ?? ''),
      held: heldUnits(request, String(reply[5 + 4 * i] ?? '')),
    })),
  };
}

/** "<j>:<units>,..." (the j-th bucket of the request, from 1) -> units added to the hold, by bucket id. */
function heldUnits(request: LeaseTokensRequest, text: string): BucketUnits[] {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const [j, units] = part.split(':');
    return [request.buckets[Number(j) - 1].split('$')[0], Number(units)] as const;
  });
}

/** A reply that granted at least one token, for ReplicaConfirmation (a deposed grantor's grants must not be spent). */
export function grantedAnyToken(requestCount: number): (raw: unknown) => boolean {
  return (raw) => {
    const reply = raw as (number | string)[];
    if (Number(reply[1]) !== LeaseTokensStatus.Decided) return false;
    for (let i = 0; i < requestCount; i++) if (Number(reply[2 + 4 * i]) > 0) return true;
    return false;
  };
}
