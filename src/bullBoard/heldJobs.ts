import { KeyValue } from '../declarations/Key';
import { decodeBucket, decodeSegment } from '../keys/keyEncoding';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { RedisClient } from '../redis/connection';

/** Where a held job sits in the throttle layer's keys (docs/keys.md, Per-queue keys). */
export type HeldPlace =
  /** In `ready-jobs`, or in the list of a class that no full bucket holds: it goes with a next delivery call. */
  | {
    /** `'ready'`: no bucket holds the job; it goes with a next delivery call of a worker with a free slot. */
    kind: 'ready';
  }
  /**
   * In the list of a class that waits on a full (or paused) bucket of `throttle`: `key` holds its key values, []
   * for an unkeyed throttle's one bucket, null for the shared bucket of jobs missing the key (as BucketStats.key).
   */
  | {
    /** `'waiting'`: the job's class waits on a full (or paused) bucket, named by `throttle` and `key`. */
    kind: 'waiting';
    /** The name of the throttle whose bucket holds the job. */
    throttle: string;
    /**
     * The bucket's key values, in the order of the throttle's key parts; [] for an unkeyed throttle's one
     * bucket (and when `segment` is set); null for the shared bucket of jobs missing the key.
     */
    key: KeyValue[] | null;
    /** The bucket's segment as stored, when this version cannot decode it (a newer writer's). */
    segment?: string;
  }
  /** In `intake`: taken from bullmq's wait, being classified right now. */
  | {
    /** `'classifying'`: the job was just taken from bullmq's wait and is being classified (milliseconds). */
    kind: 'classifying';
  };

export interface HeldJobRef {
  readonly id: string;
  readonly place: HeldPlace;
}

/** One sorted set of held jobs and how many it holds, in the order the page walks them. */
interface Segment {
  readonly size: number;
  read(start: number, stop: number): Promise<HeldJobRef[]>;
}

/**
 * The held jobs at positions start..end (inclusive; end -1: to the last) of one queue, in this order: `ready-jobs`
 * (the next to go, in delivery order), then each class's own list (classes ordered by their first job, so the
 * longest held come first), then `intake`. Each sorted set is read with ZRANGE offsets: a page costs a ZRANGE per
 * set it touches, and, once it reaches past `ready-jobs`, a SMEMBERS of `classes` and two commands per class
 * (their sizes and first jobs) - never a read of every held job.
 */
export async function readHeldJobs(client: RedisClient, keys: QueueThrottleKeys, start: number, end: number): Promise<HeldJobRef[]> {
  if (start < 0 || (end >= 0 && end < start)) return [];
  const readySize = await client.zcard(keys.readyJobs);
  const segments: Segment[] = [readyJobsSegment(client, keys, readySize)];
  if (end < 0 || end >= readySize) {
    segments.push(...(await classSegments(client, keys)));
    segments.push(intakeSegment(client, keys, await client.zcard(keys.intake)));
  }
  const found: HeldJobRef[] = [];
  let offset = 0;
  for (const segment of segments) {
    const from = Math.max(start - offset, 0);
    const to = end < 0 ? segment.size - 1 : Math.min(end - offset, segment.size - 1);
    if (from <= to) found.push(...(await segment.read(from, to)));
    offset += segment.size;
    if (end >= 0 && offset > end) break;
  }
  return found;
}

function readyJobsSegment(client: RedisClient, keys: QueueThrottleKeys, size: number): Segment {
  return {
    size,
    async read(from, to) {
      // Members are "<class>#<job id>": a class never holds '#' (its names and segments are encoded), a job id may.
      const members = await client.zrange(keys.readyJobs, String(from), String(to));
      return members.map((member) => ({ id: member.slice(member.indexOf('#') + 1), place: { kind: 'ready' } }));
    },
  };
}

async function classSegments(client: RedisClient, keys: QueueThrottleKeys): Promise<Segment[]> {
  const classes = await client.smembers(keys.classes);
  const described = await Promise.all(classes.map(async (member) => {
    const list = keys.classJobs(member);
    const [size, first, waitsOn] = await Promise.all([
      client.zcard(list),
      client.zrange(list, '0', '0', 'WITHSCORES'),
      client.hget(keys.classState, member),
    ]);
    return { member, list, size, firstScore: first.length === 2 ? Number(first[1]) : Infinity, waitsOn };
  }));
  described.sort((a, b) => a.firstScore - b.firstScore || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  return described.filter((c) => c.size > 0).map(({ list, size, waitsOn }) => {
    const place: HeldPlace = waitsOn === null ? { kind: 'ready' } : waitingOn(waitsOn);
    return {
      size,
      async read(from, to) {
        return (await client.zrange(list, String(from), String(to))).map((id) => ({ id, place }));
      },
    };
  });
}

function intakeSegment(client: RedisClient, keys: QueueThrottleKeys, size: number): Segment {
  return {
    size,
    async read(from, to) {
      return (await client.zrange(keys.intake, String(from), String(to))).map((id) => ({ id, place: { kind: 'classifying' } }));
    },
  };
}

/** The bucket a class waits on, from its id in `class-state`: "<encoded throttle>=<bucket segment>". */
export function waitingOn(bucketId: string): HeldPlace {
  const eq = bucketId.indexOf('=');
  const throttle = decodeSegment(bucketId.slice(0, eq));
  const segment = bucketId.slice(eq + 1);
  try {
    const bucket = decodeBucket(segment);
    return { kind: 'waiting', throttle, key: bucket.kind === 'keyed' ? bucket.values : bucket.kind === 'unkeyed' ? [] : null };
  } catch {
    // A segment this version cannot read (a newer writer's): shown as stored rather than hiding the job.
    return { kind: 'waiting', throttle, key: [], segment };
  }
}
