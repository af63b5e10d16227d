import type { BucketUnits } from '../../delivery/leased/concurrencyHolds';
import { ScriptRunner } from '../scripts';
import { fixedKeysScript, flagArg, ScriptArg, sendCall } from './scriptCall';
import { parseTakeReply, TakeCall, takeJobsInput, takeNextJobsScript, TakeReply } from './takeNextJobs';

/**
 * lua/takeLeasedJobs-19.lua, leased delivery: puts the tokens the grantor granted in the queue's pools, then delivers
 * as lua/takeNextJobs-19.lua does (its KEYS, and its ARGV up to ARGV[14+K], which is 0 here), with the tokens as room.
 */
export const takeLeasedJobsScript = fixedKeysScript('takeLeasedJobs', takeNextJobsScript.keys);

/** Tokens the grantor granted (or refused) for one class, to be put in the queue's pools. */
export interface Deposit {
  readonly member: string;
  /** The queue node's clock (us) in the reply the request followed: the tokens expire h after it. */
  readonly requestUs: number;
  /** The grantor's clock (us) at the grant: with the lease, it finds the tokens in the counters again. */
  readonly grantUs: number;
  readonly nonce: string;
  readonly count: number;
  /** When the grantor has room for more of the class (ms from its answer; 0: unknown or now, NO_PUBLISHED_LIMITS: no such throttle). */
  readonly roomInMs: number;
  /** The bucket id whose room comes last ('' when all were granted). */
  readonly lacking: string;
  /** Leased ahead for a flowing class: kept beyond its held jobs. */
  readonly refill: boolean;
}

/** Tokens to give back to the grantor (lua/returnLeasedTokens-1.lua). */
export interface ReturnGroup {
  readonly bucketId: string;
  readonly grantUs: number;
  /** h, as the tokens were granted. */
  readonly leaseMs: number;
  readonly nonce: string;
  readonly count: number;
}

export interface LeaseReply {
  /** Tokens found expired in the call (refused deposits included). */
  expired: number;
  /** The queue node's identity: deposits of requests that followed this reply name it. */
  node: string;
  /** Classes waiting for tokens, first in queue order, with their held jobs (REFILL_AHEAD, -1: a flowing class whose pool ran low). */
  wanted: { member: string; held: number }[];
  returns: ReturnGroup[];
  /** Jobs delivered on the calling worker's units of concurrency, with what each spent per bucket. */
  spends: Map<string, BucketUnits[]>;
}

/** A wanted class's held count (-1) that says it is a bucket to refill ahead, not a class with held jobs. */
export const REFILL_AHEAD = -1;

/** A wanted class is a bucket to refill ahead (a flowing class whose pool ran low), not one with held jobs waiting. */
export function wantsRefill(wanted: { readonly held: number }): boolean {
  return wanted.held < 0;
}

/** The calling worker's concurrency, for one call (src/delivery/leased/concurrencyHolds.ts). */
export interface CallerUnits {
  /** Encoded names of the queue's throttles with a concurrency: their buckets need the worker's units. */
  readonly throttles: readonly string[];
  /** Units the worker has free, lent to this call. */
  readonly free: readonly BucketUnits[];
  /** Buckets whose units were freed since the worker's last call. */
  readonly freed: readonly string[];
}

export interface TakeLeasedJobsInput {
  /** KEYS and ARGV[1..13+K] as takeNextJobs' (ARGV[14+K], the late-call limit, is 0 here: rule 1 covers late calls). */
  readonly take: TakeCall;
  /** ARGV[15+K]: most classes waiting for tokens to answer (0: none). */
  readonly wantsLimit: number;
  /** ARGV[16+K]: the queue node's identity the worker saw in its last reply ('' for none). */
  readonly knownNode: string;
  /** ARGV[17+K]: the node the deposits' requests followed a reply of. */
  readonly depositsNode: string;
  /** ARGV[18+K]: a pool left with fewer tokens than this asks for a refill. */
  readonly refillBelow: number;
  /** ARGV[19+K]..: D, then the deposits. */
  readonly deposits: readonly Deposit[];
  /** Then the worker's concurrency: its throttles with one, its free units, the buckets its ended jobs freed. */
  readonly units: CallerUnits;
}

/** The return group of 5 fields at `at` (lua/takeLeasedJobs-19.lua, lua/withdrawLeases-1.lua). */
export function returnGroupAt(raw: unknown[], at: number): ReturnGroup {
  return { bucketId: String(raw[at]), grantUs: Number(raw[at + 1]), leaseMs: Number(raw[at + 2]), nonce: String(raw[at + 3]), count: Number(raw[at + 4]) };
}

/** One leased delivery call: deposits, then delivery as takeNextJobs. */
export function runTakeLeasedJobs(runner: ScriptRunner, input: TakeLeasedJobsInput): Promise<{ reply: TakeReply; lease: LeaseReply }> {
  const { keys, args } = takeJobsInput({ ...input.take, lateAfterUs: 0 });
  const { deposits, units } = input;
  const callArgs: ScriptArg[] = args;
  callArgs.push(input.wantsLimit, input.knownNode, input.depositsNode, input.refillBelow, deposits.length);
  for (const d of deposits) callArgs.push(d.member, d.requestUs, d.grantUs, d.nonce, d.count, d.roomInMs, d.lacking, flagArg(d.refill));
  callArgs.push(units.throttles.length, ...units.throttles, units.free.length, ...units.free.flat(), units.freed.length, ...units.freed);
  return sendCall(runner, { name: takeLeasedJobsScript.name, keys, args: callArgs })
    .then((raw) => parseTakeLeasedJobsReply(raw as [unknown[], unknown[], unknown[] | undefined]));
}

/** { takeNextJobs' reply, lease, tickets } (the header of lua/takeLeasedJobs-19.lua). */
export function parseTakeLeasedJobsReply([base, lease, tickets]: [unknown[], unknown[], unknown[] | undefined]): { reply: TakeReply; lease: LeaseReply } {
  const wantedCount = Number(lease[2]);
  const wanted: LeaseReply['wanted'] = [];
  for (let i = 0; i < wantedCount; i++) wanted.push({ member: String(lease[3 + 2 * i]), held: Number(lease[4 + 2 * i]) });
  const returnsAt = 3 + 2 * wantedCount;
  const returns: ReturnGroup[] = [];
  const returnCount = Number(lease[returnsAt]);
  for (let i = 0; i < returnCount; i++) returns.push(returnGroupAt(lease, returnsAt + 1 + 5 * i));
  const spends = new Map<string, BucketUnits[]>();
  let at = returnsAt + 1 + 5 * returnCount;
  const spendCount = Number(lease[at++] ?? 0);
  for (let i = 0; i < spendCount; i++) {
    const jobId = String(lease[at]);
    const k = Number(lease[at + 1]);
    const units: BucketUnits[] = [];
    for (let j = 0; j < k; j++) units.push([String(lease[at + 2 + 2 * j]), Number(lease[at + 3 + 2 * j])]);
    spends.set(jobId, units);
    at += 2 + 2 * k;
  }
  const reply = parseTakeReply(base);
  // What each job spent, with the earliest expiry of its tokens (its processor must start by then).
  if (Array.isArray(tickets) && tickets.length === reply.jobs.length) reply.tickets = tickets.map(String);
  return { reply, lease: { expired: Number(lease[0]), node: String(lease[1] ?? ''), wanted, returns, spends } };
}
