import pino from 'pino';
import { UnknownQueueError } from '../errors/UnknownQueueError';
import { RedisClient } from '../redis/connection';
import { entriesOfQueue, queueConfigFrom } from '../queueState/queueConfig';
import { forgetRemovedJobs } from '../queueState/forgetRemovedJobs';
import { PlainWorkerDetector } from '../queueState/plainWorkerDetector';
import { AdminContext } from './adminContext';
import { suggestionText } from './nearbyNames';
import { readQueueHolds } from './queueHolds';
import { readFairShares } from './fairShares';
import { throttleSummary } from './throttleSummary';
import { QueueStats } from './types';

/** Why a queue is paced (ThrottleAdmin.queueStats). */
export async function readQueueStats(admin: AdminContext, queue: string): Promise<QueueStats> {
  const q = admin.keys.queue(queue);
  // The queue's own times are read with the clock of the node holding the queue (readQueueHolds).
  const entries = await admin.registry.liveEntries();
  const mine = entriesOfQueue(entries, queue, admin.keys.prefix);
  const known = mine.length > 0 || (await anyExists(admin.connections.client, [q.state, `${admin.keys.prefix}:${queue}:meta`, `${admin.keys.prefix}:${queue}:id`]));
  if (!known) {
    const live = entries.filter((e) => e.prefix === admin.keys.prefix).map((e) => e.queue);
    throw new UnknownQueueError(`queue '${queue}' has no jobs and no ThrottledWorker under prefix '${admin.keys.prefix}': check the queue name and --prefix.${suggestionText(queue, live, 'queue with a live ThrottledWorker')}`);
  }
  const bull = admin.connections.queueFor(queue);
  const config = queueConfigFrom(entries, queue, admin.keys.prefix);
  // Held jobs removed from outside since the workers last looked stop counting first.
  await forgetRemovedJobs(admin.connections.runner, bull.keys.events, q);
  const [counts, holds, consumers, fairness] = await Promise.all([
    bull.getJobCounts(),
    readQueueHolds(admin.connections.runner, q, config.throttles.map((t) => t.name)),
    new PlainWorkerDetector(admin.connections.client, admin.keys.prefix, queue, pino({ level: 'silent' })).consumers(),
    readFairShares(admin.connections.client, q, config.fairness),
  ]);
  return {
    queue,
    counts,
    throttled: holds.held + holds.classifying,
    heldByFullBuckets: holds.blocked,
    classifying: holds.classifying,
    throttles: config.throttles.map((t) => throttleSummary(t, mine.filter((e) => e.declarations.some((d) => d.name === t.name)).length)),
    throttledWorkers: mine.length,
    plainWorkers: consumers === undefined ? null : Math.max(0, consumers - mine.length),
    oldestHeldMs: holds.oldestWaitingSince === null ? null : Math.max(0, holds.nowMs - holds.oldestWaitingSince),
    fairness,
    at: holds.nowMs,
  };
}

/**
 * Whether any of the keys exists. One EXISTS per key: a queue's throttle keys and bullmq's share a slot
 * only when the prefix or the queue name has a hash tag, and a multi-key command across slots is refused.
 */
async function anyExists(client: RedisClient, keys: readonly string[]): Promise<boolean> {
  const found = await Promise.all(keys.map((key) => client.exists(key)));
  return found.some((n) => n > 0);
}
