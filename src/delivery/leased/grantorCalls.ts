import { ScriptRunner } from '../../lua/scripts';
import { LeaseTokensStatus, runLeaseTokens } from '../../lua/calls/leaseTokens';
import { runReadQueueHistory } from '../../lua/calls/readQueueHistory';
import { runRenewHolds } from '../../lua/calls/renewHolds';
import { runReportQueueHistory } from '../../lua/calls/reportQueueHistory';
import { runReturnLeasedTokens } from '../../lua/calls/returnLeasedTokens';
import { LateLeasedGrant, runCountLateLeased } from '../../lua/calls/countLateLeased';
import { ReturnGroup } from '../../lua/calls/takeLeasedJobs';
import { ReplicaConfirmation } from '../../redis/ReplicaConfirmation';
import { BucketUnits, HoldRenewal } from './concurrencyHolds';

/** Where the namespace's grantor is: the connection that reaches its slot, and the keys that name it. */
export interface GrantorTarget {
  readonly runner: ScriptRunner;
  /** Any key of the namespace (it routes the call to the namespace's slot). */
  readonly slotKey: string;
  readonly throttlePrefix: string;
  /** Grants start only once a replica of the grantor's node holds them (src/redis/ReplicaConfirmation.ts). */
  readonly confirmation: ReplicaConfirmation;
}

export interface LeaseRequest {
  readonly member: string;
  /** Each bucket's id, followed by "$<cost>" where a delivery of the class costs other than 1 there. */
  readonly buckets: readonly string[];
  /** Deliveries wanted: each takes its cost in tokens from every bucket. */
  readonly count: number;
  /** Leased ahead for a class that is flowing (its pool ran low), not for held jobs. */
  readonly refill: boolean;
}

export interface LeaseAnswer {
  grantUs: number;
  /**
   * 'decided'; 'report': the grantor is rebuilding its counts after a restart or failover and needs this
   * queue's recent deliveries first (reportQueueHistory); 'wait': others' are still awaited. Nothing is
   * granted unless 'decided'.
   */
  status: 'decided' | 'report' | 'wait';
  /**
   * Per request: deliveries granted (each its cost in tokens in every bucket); when more would fit (ms; 0: all granted; NO_PUBLISHED_LIMITS: a throttle is not declared);
   * the bucket id whose room comes last ('' when all were granted); the units of concurrency added to the
   * worker's hold, by bucket (lua/includes/inFlightCounter.lua).
   */
  results: { granted: number; roomInMs: number; lacking: string; held: BucketUnits[] }[];
}

/** Asks the grantor for tokens (lua/leaseTokens-1.lua): each request's tokens granted together, against W + h. */
export async function leaseTokens(grantor: GrantorTarget, asker: Asker, requests: readonly LeaseRequest[]): Promise<LeaseAnswer> {
  const reply = await runLeaseTokens(grantor.runner, {
    slot: grantor.slotKey, throttlePrefix: grantor.throttlePrefix, leaseMs: asker.leaseMs, queueId: asker.queueId, durableRedis: asker.durableRedis,
    holder: asker.holder, holdMs: asker.holdMs, knownNodeId: asker.knownNodeId, credit: asker.credit, requests,
  }, grantor.confirmation);
  return {
    grantUs: reply.grantUs,
    status: reply.status === LeaseTokensStatus.Report ? 'report' : reply.status === LeaseTokensStatus.Wait ? 'wait' : 'decided',
    results: reply.results,
  };
}

/**
 * Sets what this worker holds of its throttles' concurrency (lua/renewHolds-1.lua): each bucket's hold, renewed
 * for `holdMs`; 0 drops it. Resolves to the grantor's clock (ms) and the buckets whose hold it had let lapse (only
 * their units in use are held again).
 */
export async function renewHolds(grantor: GrantorTarget, holder: string, holdMs: number, holds: readonly HoldRenewal[]): Promise<{ nowMs: number; lapsed: string[] }> {
  // Confirmed like a grant: a renewal a failover loses could let a hold lapse before its worker stops spending it.
  const { nowMs, lapsed } = await runRenewHolds(grantor.runner, { slot: grantor.slotKey, throttlePrefix: grantor.throttlePrefix, holder, holdMs, holds }, grantor.confirmation);
  return { nowMs, lapsed };
}

/** Who asks the grantor: the queue (prefix:queue, as registry entries name it), its lease, its Redis's durability. */
export interface Asker {
  readonly queueId: string;
  readonly leaseMs: number;
  readonly durableRedis: boolean;
  /** The worker: the holder of the units of concurrency a grant adds (lua/includes/inFlightCounter.lua). */
  readonly holder: string;
  /** A hold's lifetime: it lapses this long after its last grant or renewal. */
  readonly holdMs: number;
  /** Units the worker holds and has free, by bucket: a grant uses them first. */
  readonly credit: readonly BucketUnits[];
  /** The grantor's node identity the worker saw recorded ('' for none: src/recovery/namespaceIdentity.ts). */
  readonly knownNodeId: string;
}

/**
 * Tells a grantor that is rebuilding its counts what this queue delivered lately (lua/readQueueHistory-1.lua
 * on the queue's Redis, then lua/reportQueueHistory-1.lua on the grantor's); `throttles` are the encoded names
 * of the throttles the queue declares, `seenAlive` the exact workers and leased queues the worker saw alive lately (id and
 * "<encoded throttle>:<longest ms>,...": the gather waits for them too). Resolves to the deliveries counted again.
 */
export async function reportQueueHistory(
  queue: ScriptRunner, historyIndexKey: string, queueBase: string, grantor: GrantorTarget, queueId: string, throttles: readonly string[],
  seenAlive: readonly (readonly [string, string])[] = [],
): Promise<number> {
  const history = await runReadQueueHistory(queue, { historyIndex: historyIndexKey, queueBase });
  const reply = await runReportQueueHistory(grantor.runner, {
    slot: grantor.slotKey, throttlePrefix: grantor.throttlePrefix, queueId, wholeForUs: history.wholeForUs, seenAlive, throttles, history: history.buckets,
  });
  return reply.counted;
}

/** Gives tokens back (lua/returnLeasedTokens-1.lua); resolves to how many stopped counting. */
export async function returnLeasedTokens(grantor: GrantorTarget, groups: readonly ReturnGroup[]): Promise<number> {
  if (groups.length === 0) return 0;
  const reply = await runReturnLeasedTokens(grantor.runner, { slot: grantor.slotKey, throttlePrefix: grantor.throttlePrefix, groups });
  return reply.returned;
}

/**
 * The grants a started job's tokens came from count `byMs` longer (lua/countLateLeased-1.lua); resolves to how many
 * of them the call came too late for (their release had passed).
 */
export async function countLateLeased(grantor: GrantorTarget, byMs: number, grants: readonly LateLeasedGrant[]): Promise<number> {
  if (grants.length === 0 || byMs <= 0) return 0;
  const reply = await runCountLateLeased(grantor.runner, { slot: grantor.slotKey, throttlePrefix: grantor.throttlePrefix, byMs, grants });
  return reply.missed;
}
