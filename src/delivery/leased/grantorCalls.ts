import { ScriptRunner } from '../../lua/scripts';
import { ReplicaConfirmation } from '../../redis/ReplicaConfirmation';
import { BucketUnits, HoldRenewal } from './concurrencyHolds';
import { ReturnGroup } from './takeLeasedJobs';

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
   * Per request: deliveries granted (each its cost in tokens in every bucket); when more would fit (ms; 0: all granted; -1: a throttle is not declared);
   * the bucket id whose room comes last ('' when all were granted); the units of concurrency added to the
   * worker's hold, by bucket (lua/includes/inFlightCounter.lua).
   */
  results: { granted: number; roomInMs: number; lacking: string; held: BucketUnits[] }[];
}

/** Asks the grantor for tokens (lua/leaseTokens-1.lua): each request's tokens granted together, against W + h. */
export async function leaseTokens(grantor: GrantorTarget, asker: Asker, requests: readonly LeaseRequest[]): Promise<LeaseAnswer> {
  const args: (string | number)[] = [grantor.throttlePrefix, asker.leaseMs, asker.queueId, asker.durableRedis ? '1' : '', asker.holder, asker.holdMs, asker.knownNodeId];
  args.push(asker.credit.length, ...asker.credit.flat(), requests.length);
  for (const request of requests) args.push(request.count, request.refill ? '1' : '', request.buckets.length, ...request.buckets);
  const call = { name: 'leaseTokens', keys: [grantor.slotKey], args };
  const reply = (await grantor.confirmation.run(grantor.runner, call, grantedAny(requests.length))) as (number | string)[];
  const status = Number(reply[1]);
  return {
    grantUs: Number(reply[0]),
    status: status === 1 ? 'report' : status === 2 ? 'wait' : 'decided',
    results: requests.map((request, i) => ({
      granted: Number(reply[2 + 4 * i]), roomInMs: Number(reply[3 + 4 * i]), lacking: String(reply[4 + 4 * i] ?? ''),
      held: heldUnits(request, String(reply[5 + 4 * i] ?? '')),
    })),
  };
}

/** "<j>:<units>,..." (the j-th bucket of the request, from 1) -> units added to the hold, by bucket id. */
function heldUnits(request: LeaseRequest, text: string): BucketUnits[] {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const [j, units] = part.split(':');
    return [request.buckets[Number(j) - 1].split('$')[0], Number(units)] as const;
  });
}

/**
 * Sets what this worker holds of its throttles' concurrency (lua/renewHolds-1.lua): each bucket's hold, renewed
 * for `holdMs`; 0 drops it. Resolves to the grantor's clock (ms) and the buckets whose hold it had let lapse (only
 * their units in use are held again).
 */
export async function renewHolds(grantor: GrantorTarget, holder: string, holdMs: number, holds: readonly HoldRenewal[]): Promise<{ nowMs: number; lapsed: string[] }> {
  const call = { name: 'renewHolds', keys: [grantor.slotKey], args: [grantor.throttlePrefix, holder, holdMs, holds.length, ...holds.flat()] };
  // Confirmed like a grant: a renewal a failover loses could let a hold lapse before its worker stops spending it.
  const reply = (await grantor.confirmation.run(grantor.runner, call, () => true)) as unknown[];
  return { nowMs: Number(reply[0]), lapsed: reply.slice(2).map(String) };
}

/** A leaseTokens reply granted at least one token (a deposed grantor's grants must not be spent). */
function grantedAny(requests: number): (raw: unknown) => boolean {
  return (raw) => {
    const reply = raw as (number | string)[];
    if (Number(reply[1]) !== 0) return false;
    for (let i = 0; i < requests; i++) if (Number(reply[2 + 4 * i]) > 0) return true;
    return false;
  };
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
  /** The grantor's node identity the worker saw recorded ('' for none: src/worker/namespaceIdentity.ts). */
  readonly knownNodeId: string;
}

/**
 * Tells a grantor that is rebuilding its counts what this queue delivered lately (lua/readQueueHistory-1.lua
 * on the queue's Redis, then lua/reportQueueHistory-1.lua on the grantor's); `throttles` are the encoded names
 * of the throttles the queue declares, `queuesSeen` the leased queues the worker saw alive lately (id and
 * "<encoded throttle>:<longest ms>,...": the gather waits for them too). Resolves to the deliveries counted again.
 */
export async function reportQueueHistory(
  queue: ScriptRunner, historyIndexKey: string, queueBase: string, grantor: GrantorTarget, queueId: string, throttles: readonly string[],
  queuesSeen: readonly (readonly [string, string])[] = [],
): Promise<number> {
  const history = (await queue.run('readQueueHistory', [historyIndexKey], [queueBase])) as unknown[];
  const args: (string | number)[] = [grantor.throttlePrefix, queueId, Number(history[0]), queuesSeen.length];
  for (const [id, declared] of queuesSeen) args.push(id, declared);
  args.push(throttles.length, ...throttles);
  args.push(...(history.slice(1) as (string | number)[]));
  const reply = (await grantor.runner.run('reportQueueHistory', [grantor.slotKey], args)) as number[];
  return Number(reply[1]);
}

/** Gives tokens back (lua/returnLeasedTokens-1.lua); resolves to how many stopped counting. */
export async function returnLeasedTokens(grantor: GrantorTarget, groups: readonly ReturnGroup[]): Promise<number> {
  if (groups.length === 0) return 0;
  const args: (string | number)[] = [grantor.throttlePrefix, groups.length];
  for (const g of groups) args.push(g.bucketId, g.grantUs, g.leaseMs, g.nonce, g.count);
  const reply = (await grantor.runner.run('returnLeasedTokens', [grantor.slotKey], args)) as number[];
  return Number(reply[1]);
}
