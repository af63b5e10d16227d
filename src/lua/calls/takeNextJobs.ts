import type { QueueThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptCallSpec, ScriptRunner } from '../scripts';
import { CallConfirmation, fixedKeysScript, keysInOrder, KeysOf, sendCall } from './scriptCall';

/**
 * lua/takeNextJobs-19.lua, exact delivery: the next jobs that fit, each locked with its slot's token, moved to active.
 * Its KEYS and ARGV up to the tokens are lua/takeLeasedJobs-19.lua's too (lua/includes/takeJobsInput.lua), and so
 * is the first part of that script's reply.
 */
export const takeNextJobsScript = fixedKeysScript('takeNextJobs', [
  'wait', 'active', 'prioritized', 'events', 'delayed', 'meta', 'pc', 'marker',
  'readyJobs', 'readyClasses', 'wakeups', 'state', 'classes', 'stale', 'classState', 'removedHeld', 'putBack',
  'limiter', 'refusedTokens',
]);

/** Refusals one delivery call may spend before handing the rest to the next call (ARGV[6]). */
const REFUSALS_PER_CALL = 32;

/** ARGV[13+K]: after a restart or promotion of the node, what the namespace's throttles do (lua/includes/recoveryHold.lua). */
export enum RecoveryAfterRestart {
  /** Hold for their longest window: the node may have lost deliveries. */
  Hold = 'hold',
  /** Resume after h: Redis keeps acknowledged writes (durableRedis). */
  Resume = 'resume',
}

/** What the delivery scripts (lua/takeNextJobs-19.lua, lua/takeLeasedJobs-19.lua) answer. */
export interface TakeReply {
  nowUs: number;
  nowMs: number;
  /** When a full bucket next has room (Redis clock, us; 0: none). */
  nextWakeUs: number;
  /** The next delayed job (ms, on the callers' clock, as bullmq keeps delays; 0: none). */
  nextDelayedMs: number;
  unclassified: number;
  stale: number;
  dropped: number;
  gen: string;
  /** The call ran out of budget with jobs still to look at. */
  more: boolean;
  /** How long bullmq's own rate limit has no room (ms; 0: it has, or there is none). */
  rateLimitMs: number;
  /** Positions in `tokens` of slots whose completion was refused: they get no job. */
  refused: Set<number>;
  /** Delivered jobs, in the order of the tokens not refused. */
  jobs: { id: string; fields: string[] }[];
  /**
   * What each job was counted in, in the order of `jobs` (src/worker/lateStarts/startDeadlines.ts reads them). Exact
   * delivery with a start deadline (leaseMs > 0): per bucket "<bucket id>$<cost>@<window ms>,..." joined by '|'.
   * Leased delivery: "<expiry us>!" (the earliest expiry of the tokens the job spent), then per bucket
   * "<bucket id>$<cost>@" joined by '|'. '' for a job no window (exact) or leased token (leased) counted.
   */
  tickets?: string[];
}

export interface TakeCall {
  /** bullmq's keys of the queue (a backend's `keys`). */
  bullmqKeys: Readonly<Record<string, string>>;
  queueKeys: QueueThrottleKeys;
  throttlePrefix: string;
  lockDuration: number;
  leaseMs: number;
  workerName: string;
  /** The worker's bullmq `limiter` option, if any. */
  limiter?: { max: number; duration: number };
  /** The config generation the worker holds ('' before it has one). */
  gen: string;
  /** Redis keeps acknowledged writes: after a restart or promotion, throttles resume after h, not their longest window. */
  durableRedis: boolean;
  /** When the call is too late to count a delivery (us, the node's clock; 0 or absent: no limit). */
  lateAfterUs?: number;
  /** The namespace's node identity this worker saw recorded (src/recovery/namespaceIdentity.ts; '' for none). */
  knownNodeId?: string;
  /** One lock token per slot asking: up to that many jobs are delivered. */
  tokens: readonly string[];
}

/** The KEYS and ARGV both delivery scripts take (lua/includes/takeJobsInput.lua), up to ARGV[14+K]. */
export function takeJobsInput(call: TakeCall): { keys: string[]; args: (string | number)[] } {
  const keys = call.bullmqKeys;
  const q = call.queueKeys;
  const named: KeysOf<typeof takeNextJobsScript> = {
    wait: keys.wait, active: keys.active, prioritized: keys.prioritized, events: keys.events, delayed: keys.delayed,
    meta: keys.meta, pc: keys.pc, marker: keys.marker,
    readyJobs: q.readyJobs, readyClasses: q.readyClasses, wakeups: q.wakeups, state: q.state, classes: q.classes,
    stale: q.stale, classState: q.classState, removedHeld: q.removedHeld, putBack: q.putBack,
    limiter: keys.limiter, refusedTokens: q.refusedTokens,
  };
  return {
    keys: keysInOrder(takeNextJobsScript, named),
    args: [
      keys[''], call.lockDuration, call.workerName, q.base, call.throttlePrefix, REFUSALS_PER_CALL, call.leaseMs,
      // This process's clock, for delayed jobs only (bullmq promotes them on its caller's clock).
      call.gen, call.limiter?.max ?? '', call.limiter?.duration ?? '', Date.now(), call.tokens.length, ...call.tokens,
      call.durableRedis ? RecoveryAfterRestart.Resume : RecoveryAfterRestart.Hold,
      call.lateAfterUs ?? 0,
    ],
  };
}

/** Reads the delivery scripts' reply (the header of lua/takeNextJobs-19.lua). */
export function parseTakeReply(raw: unknown[]): TakeReply {
  const count = Number(raw[8]);
  const refusedCount = Number(raw[10]);
  const refused = new Set<number>();
  for (let i = 0; i < refusedCount; i++) refused.add(Number(raw[11 + i]) - 1);
  const first = 11 + refusedCount;
  const jobs: TakeReply['jobs'] = [];
  for (let i = 0; i < count; i++) jobs.push({ id: String(raw[first + 2 * i]), fields: raw[first + 1 + 2 * i] as string[] });
  // Only lua/takeNextJobs-19.lua's reply has them (the leased script's reply goes on with its lease part).
  const tickets = Array.isArray(raw[first + 2 * count]) && (raw[first + 2 * count] as unknown[]).length === count
    ? (raw[first + 2 * count] as unknown[]).map(String) : undefined;
  return {
    ...(tickets ? { tickets } : {}),
    nowUs: Number(raw[0]),
    nowMs: Math.floor(Number(raw[0]) / 1000),
    nextWakeUs: Number(raw[1]),
    nextDelayedMs: Number(raw[2]),
    unclassified: Number(raw[3]),
    stale: Number(raw[4]),
    dropped: Number(raw[5]),
    gen: String(raw[6]),
    more: Number(raw[7]) === 1,
    rateLimitMs: Number(raw[9]),
    refused,
    jobs,
  };
}

/** The exact delivery call: the shared input, then ARGV[15+K], the node identity the worker saw. */
export function takeNextJobsCall(call: TakeCall): ScriptCallSpec {
  const { keys, args } = takeJobsInput(call);
  return { name: takeNextJobsScript.name, keys, args: [...args, call.knownNodeId ?? ''] };
}

/** The reply delivered at least one job (its count, field 9 of the reply): what ReplicaConfirmation must confirm. */
export function deliveredAny(raw: unknown): boolean {
  return Number((raw as unknown[])[8]) > 0;
}

/** One exact delivery call; with `confirmation`, its jobs are answered once a replica holds them (when the node has replicas). */
export function runTakeNextJobs(runner: ScriptRunner, call: TakeCall, confirmation?: CallConfirmation): Promise<TakeReply> {
  const spec = takeNextJobsCall(call);
  const sent = confirmation ? confirmation.run(runner, spec, deliveredAny) : sendCall(runner, spec);
  return sent.then((raw) => parseTakeReply(raw as unknown[]));
}
