import { ScriptCallSpec, ScriptRunner } from '../lua/scripts';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';

/** Refusals one delivery call may spend before handing the rest to the next call. */
const REFUSALS_PER_CALL = 32;

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
   * What each job was counted in, in the order of `jobs` (src/worker/startDeadlines.ts reads them). Exact
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
  /** The namespace's node identity this worker saw recorded (src/worker/namespaceIdentity.ts; '' for none). */
  knownNodeId?: string;
  /** One lock token per slot asking: up to that many jobs are delivered. */
  tokens: readonly string[];
}

/** The KEYS and ARGV both delivery scripts take (lua/includes/takeJobsInput.lua), up to the lock tokens. */
export function takeJobsInput(call: TakeCall): { keys: string[]; args: (string | number)[] } {
  const keys = call.bullmqKeys;
  const q = call.queueKeys;
  return {
    keys: [
      keys.wait, keys.active, keys.prioritized, keys.events, keys.delayed, keys.meta, keys.pc, keys.marker,
      q.readyJobs, q.readyClasses, q.wakeups, q.state, q.classes, q.stale, q.classState, q.removedHeld, q.putBack,
      keys.limiter, q.refusedTokens,
    ],
    args: [
      keys[''], call.lockDuration, call.workerName, q.base, call.throttlePrefix, REFUSALS_PER_CALL, call.leaseMs,
      // This process's clock, for delayed jobs only (bullmq promotes them on its caller's clock).
      call.gen, call.limiter?.max ?? '', call.limiter?.duration ?? '', Date.now(), call.tokens.length, ...call.tokens,
      call.durableRedis ? 'resume' : 'hold',
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

/** One exact delivery call: the next jobs that fit, each locked with its slot's token, moved to active. */
export async function takeNextJobs(runner: ScriptRunner, call: TakeCall): Promise<TakeReply> {
  const { keys, args } = takeNextJobsCall(call);
  return parseTakeReply((await runner.run('takeNextJobs', keys, args)) as unknown[]);
}

/** The same call, as a pipeline entry (src/redis/ReplicaConfirmation.ts): the shared input, then the node identity the worker saw. */
export function takeNextJobsCall(call: TakeCall): ScriptCallSpec {
  const { keys, args } = takeJobsInput(call);
  return { name: 'takeNextJobs', keys, args: [...args, call.knownNodeId ?? ''] };
}

/** The reply delivered at least one job (its count, field 9 of the reply). */
export function deliveredAny(raw: unknown): boolean {
  return Number((raw as unknown[])[8]) > 0;
}

/**
 * When the next bucket has room or delayed job is due, on this process's clock (ms; to the us for room), if
 * any: a bucket's room is on the Redis clock (converted through the reply's nowUs), a delayed job on the
 * callers' clock already.
 */
export function nextLookLocalMs(reply: TakeReply, localNowMs: number): number | undefined {
  const times: number[] = [];
  if (reply.nextWakeUs > 0) times.push((reply.nextWakeUs - reply.nowUs) / 1000 + localNowMs);
  if (reply.nextDelayedMs > 0) times.push(reply.nextDelayedMs);
  return times.length === 0 ? undefined : Math.min(...times);
}
