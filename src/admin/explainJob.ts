import pino from 'pino';
import { KeyValue } from '../declarations/Key';
import { decodeBucket, decodeSegment } from '../keys/keyEncoding';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';
import { classBuckets } from '../keys/classMember';
import { JobClassifier } from '../queueState/jobClassifier';
import { QueueConfig } from '../queueState/queueConfig';
import { formatDuration, formatWindow } from '../declarations/windowText';
import { estimateStart, positionInBucket } from './jobPosition';
import { BucketStats } from './types';

/** Why one job is not delivered yet (ThrottleAdmin.explainJob). */
export interface JobExplanation {
  /** The queue's name, as asked for. */
  queue: string;
  /** The job's id, as asked for. */
  jobId: string;
  /** 'held': the throttle layer holds it; otherwise bullmq's state ('waiting', 'active', 'completed', ...). */
  state: string;
  /** Held waiting on a bucket without room (its class waits on it), held and about to go, or not held. */
  held: 'waiting-on-bucket' | 'ready' | null;
  /** Every bucket the job draws from under the queue's throttles, with what it counts now and what the job costs there (1 unless its throttle declares a cost). */
  buckets: (BucketStats & {
    /** Whether this bucket holds the job now: the job's class waits on it for room. */
    holdsIt: boolean;
    /**
     * What one delivery of the job counts in this bucket: 1 unless its throttle declares a cost; 0 when its cost
     * cannot be counted (such a job fails when delivered).
     */
    cost: number;
  })[];
  /**
   * When the bucket(s) holding it have room again (ms, Redis clock); null when nothing holds it, or when a pause
   * without an end does (a holding bucket's nextRoomAt is null: room returns only when it is resumed).
   */
  roomAt: number | null;
  /** Jobs ahead of it on the bucket holding it (waiting there first, bullmq's order); null when it is not waiting. */
  position: number | null;
  /**
   * When it should go, from the limits in force and the jobs ahead (ms, Redis clock): an estimate, which jobs of
   * a higher priority arriving meanwhile put off; null when it is not waiting, or a pause without an end holds it.
   */
  estimatedAt: number | null;
  /**
   * When it fails for waiting too long (ms, Redis clock; Throttle.maxWait): its deadline while it waits on a full bucket
   * of a throttle that declares one; null otherwise.
   */
  deadline: number | null;
  /** One line a person can act on. */
  reason: string;
  /** Redis time of the answer (ms): the clock of the throttle namespace's node, read before the buckets. */
  at: number;
}

export interface ExplainContext {
  client: RedisClient;
  queueKeys: QueueThrottleKeys;
  /** bullmq's key prefix of the queue ("bull:orders:"). */
  jobPrefix: string;
  config: QueueConfig;
  bullmqState(): Promise<string>;
  bucket(name: string, key: KeyValue[] | null): Promise<BucketStats>;
  /** How long its workers measured a job of the throttle takes to process (ms; null: unknown), for a concurrency's estimate. */
  processingMs(name: string): Promise<number | null>;
  nowMs: number;
}

/**
 * Classifies the job as its workers did (its data, name and stored attributes), finds where it is held (a
 * class's own list, or ready-jobs) and reads each of its buckets: which one holds it, and until when.
 */
export async function explainJob(queue: string, jobId: string, context: ExplainContext): Promise<JobExplanation> {
  const { client, queueKeys: q, config } = context;
  const [name, data, opts, priority, stored] = await client.hmget(`${context.jobPrefix}${jobId}`, 'name', 'data', 'opts', 'priority', 'tha');
  const base = { queue, jobId, at: context.nowMs };
  if (data === null) return { ...base, state: 'unknown', held: null, buckets: [], roomAt: null, position: null, estimatedAt: null, deadline: null, reason: `job ${jobId} does not exist in queue ${queue}` };
  const placement = new JobClassifier(undefined, pino({ level: 'silent' }), queue).place({ id: jobId, name, data, opts, priority, storedAttributes: stored }, config);
  const member = placement.member;
  const [inClass, inReady, waitsOn, deadlineAt] = await Promise.all([
    client.zscore(q.classJobs(member), jobId),
    client.zscore(q.readyJobs, `${member}#${jobId}`),
    client.hget(q.classState, member),
    client.zscore(q.deadlines, `${member}#${jobId}`),
  ]);
  const deadline = deadlineAt === null ? null : Number(deadlineAt);
  const held = inClass !== null && waitsOn !== null ? 'waiting-on-bucket' : inClass !== null || inReady !== null ? 'ready' : null;
  const buckets = await Promise.all(classBuckets(member).map(async ({ id, encodedName, segment, cost }) => {
    const decoded = decodeBucket(segment);
    const stats = await context.bucket(decodeSegment(encodedName), decoded.kind === 'keyed' ? decoded.values : null);
    return { ...stats, cost, holdsIt: held === 'waiting-on-bucket' && waitsOn === id };
  }));
  const state = held ? 'held' : await context.bullmqState();
  const holding = buckets.filter((b) => b.holdsIt);
  const roomAt = roomAtOf(holding);
  let position: number | null = null;
  let estimatedAt: number | null = null;
  if (held === 'waiting-on-bucket' && holding.length > 0) {
    position = await positionInBucket(client, q, member, Number(inClass), waitsOn!);
    const times = await Promise.all(holding.map(async (b) => estimateStart(b, position!, b.cost, b.inFlight ? await context.processingMs(b.throttle) : null)));
    estimatedAt = times.includes(null) ? null : Math.max(...(times as number[]));
  }
  const deadlineText = deadline === null || held === null ? '' : `; it fails ${deadline <= context.nowMs ? 'with the next delivery call' : `in ${formatDuration(deadline - context.nowMs)}`} unless it goes before (maxWait)`;
  const reason = reasonOf(state, held, holding, roomAt, context.nowMs) + aheadText(position, estimatedAt, holding, context.nowMs) + deadlineText;
  return { ...base, state, held, buckets, roomAt, position, estimatedAt, deadline: held === null ? null : deadline, reason };
}

/** '; 5 jobs ahead of it there, it goes in about 3s', or '; first in line there' (it goes when room returns). */
function aheadText(position: number | null, estimatedAt: number | null, holding: readonly BucketStats[], nowMs: number): string {
  if (position === null) return '';
  if (position === 0) return '; first in line there';
  const readAt = Math.max(nowMs, ...holding.map((b) => b.at));
  const ahead = `; ${position} job${position === 1 ? '' : 's'} ahead of it there`;
  return estimatedAt === null ? ahead : `${ahead}, it goes in about ${formatDuration(Math.max(0, estimatedAt - readAt))}`;
}

/** The latest of the holding buckets' next room; null when none holds it, or one waits on a resume (no time to promise). */
function roomAtOf(holding: readonly BucketStats[]): number | null {
  if (holding.length === 0) return null;
  const times = holding.map((b) => b.nextRoomAt);
  return times.includes(null) ? null : Math.max(...(times as number[]));
}

function reasonOf(state: string, held: JobExplanation['held'], holding: BucketStats[], roomAt: number | null, nowMs: number): string {
  if (held === 'ready') return 'held, but its buckets have room: it goes with the next delivery call of a worker with a free slot';
  if (held === null) return `not held by the throttle layer: bullmq has it as ${state}`;
  const why = holding.map((b) => {
    const where = `${b.throttle}${b.key === null ? ' (jobs missing the key)' : b.key.length > 0 ? ` [${b.key.join(', ')}]` : ''}`;
    if (b.paused) return `${where} is paused ${b.paused.until === null ? 'until resumed' : `for ${formatDuration(b.paused.until - b.at)} more`}`;
    const full = b.limits.filter((l) => l.roomAt !== null).map((l) => `${l.counted}/${l.max} per ${formatWindow(l.windowMs)}`);
    if (b.rate?.roomAt) full.push(`its rate (${b.rate.n} per ${formatWindow(b.rate.perMs)}, burst ${b.rate.burst}) has no token`);
    if (b.inFlight && b.inFlight.counted >= b.inFlight.max) full.push(`${b.inFlight.counted}/${b.inFlight.max} in flight: room returns as one ends`);
    return `${where} is full (${full.join(', ') || 'its room is on its way'})`;
  });
  // Each bucket was read after nowMs: a bucket with room now has nextRoomAt = its own read's time, a few ms later,
  // which is no room to promise. Only a time past the latest of those reads is.
  const readAt = Math.max(nowMs, ...holding.map((b) => b.at));
  return `waiting: ${why.join('; ')}${roomAt !== null && roomAt > readAt ? `; room returns in ${formatDuration(roomAt - readAt)}` : ''}`;
}
