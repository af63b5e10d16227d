import type { FairnessSpec } from '../declarations/Fairness';
import { describeKey, KeyValue } from '../declarations/Key';
import { bucketKeyValues } from '../keys/keyEncoding';
import type { QueueThrottleKeys } from '../keys/ThrottleKeys';
import type { RedisClient } from '../redis/connection';

/** How a queue's fairness groups shared its deliveries (queueStats().fairness): the top groups, never every group. */
export interface FairShares {
  /** The fairness key, as declared ('[Key.data("tenant")]'). */
  key: string;
  /** Groups that had deliveries counted since the queue's fair-share figures exist. */
  groups: number;
  /** Cost units delivered over every group, in the same span. */
  delivered: number;
  /** The groups with the most delivered, most first (at most 10). */
  top: {
    /** The group's key values; null for the group of jobs missing the key. */
    key: KeyValue[] | null;
    /** Cost units delivered to it. */
    delivered: number;
    /** Its part of every group's deliveries (0 to 1). */
    share: number;
    /** Its weight now: set at run time, else declared, else 1. */
    weight: number;
  }[];
}

const TOP = 10;

/** Reads what the delivery scripts count per group (lua/includes/fairness.lua: fair-delivered, state fd). */
export async function readFairShares(client: RedisClient, q: QueueThrottleKeys, fairness: FairnessSpec | undefined): Promise<FairShares | null> {
  if (!fairness) return null;
  const [groups, top, total] = await Promise.all([
    client.zcard(q.fairDelivered),
    client.zrevrange(q.fairDelivered, 0, TOP - 1, 'WITHSCORES'),
    client.hget(q.state, 'fd'),
  ]);
  const segments = top.filter((_, i) => i % 2 === 0);
  const runTime = segments.length > 0 ? await client.hmget(q.fairWeights, ...segments) : [];
  const delivered = Number(total ?? 0);
  return {
    key: describeKey(fairness.key),
    groups,
    delivered,
    top: segments.map((segment, i) => {
      const units = Number(top[2 * i + 1]);
      return {
        key: bucketKeyValues(segment),
        delivered: units,
        share: delivered > 0 ? units / delivered : 0,
        weight: Number(runTime[i] ?? fairness.weights[segment] ?? 1),
      };
    }),
  };
}
