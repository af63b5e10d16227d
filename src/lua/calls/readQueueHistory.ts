import { ScriptArg, fixedCall, fixedKeysScript, sendCall } from './scriptCall';
import { ScriptRunner } from '../scripts';

/**
 * lua/readQueueHistory-1.lua, on a queue in leased delivery: what it delivered lately, per bucket, for a grantor
 * that lost its counts (lua/reportQueueHistory-1.lua).
 */
export const readQueueHistoryScript = fixedKeysScript('readQueueHistory', ['historyIndex']);

/** wholeForUs when the history goes back to the queue's first delivery. */
export const HISTORY_WHOLE = -1;
/** wholeForUs when no part of the history is whole. */
export const HISTORY_NOT_WHOLE = 0;

/**
 * Deliveries per bucket, as the scripts exchange them ("B, then per bucket: bucket id, S, then S pairs (agoUs,
 * count)"): how long ago the latest of `count` deliveries was, one pair per slot of the bucket's counter.
 */
export type BucketHistory = readonly (readonly [bucketId: string | number, slots: readonly (readonly [agoUs: string | number, count: string | number])[]])[];

export interface QueueHistory {
  /** How far back the history is whole (us; HISTORY_NOT_WHOLE, HISTORY_WHOLE). */
  wholeForUs: number;
  buckets: BucketHistory;
}

export interface ReadQueueHistoryInput {
  /** KEYS[1]: the queue's history index (ZSET "<W>/<bucket id>" -> ms that history empties). */
  readonly historyIndex: string;
  /** The queue base of our keys. */
  readonly queueBase: string;
}

export function runReadQueueHistory(runner: ScriptRunner, input: ReadQueueHistoryInput): Promise<QueueHistory> {
  return sendCall(runner, fixedCall(readQueueHistoryScript, { historyIndex: input.historyIndex }, [input.queueBase]))
    .then((raw) => parseQueueHistory(raw as unknown[]));
}

/** Values are kept as Redis answered them: they go back to Redis as they came (pushBucketHistory). */
function parseQueueHistory(reply: unknown[]): QueueHistory {
  const buckets: [string | number, [string | number, string | number][]][] = [];
  const count = Number(reply[1]);
  let at = 2;
  for (let i = 0; i < count; i++) {
    const bucketId = reply[at] as string | number;
    const slotCount = Number(reply[at + 1]);
    const slots: [string | number, string | number][] = [];
    for (let j = 0; j < slotCount; j++) slots.push([reply[at + 2 + 2 * j] as string | number, reply[at + 3 + 2 * j] as string | number]);
    buckets.push([bucketId, slots]);
    at += 2 + 2 * slotCount;
  }
  return { wholeForUs: Number(reply[0]), buckets };
}

/** Appends "B, then per bucket: bucket id, S, then S pairs (agoUs, count)" to a call's ARGV. */
export function pushBucketHistory(args: ScriptArg[], buckets: BucketHistory): void {
  args.push(buckets.length);
  for (const [bucketId, slots] of buckets) {
    args.push(bucketId, slots.length);
    for (const [agoUs, count] of slots) args.push(agoUs, count);
  }
}
