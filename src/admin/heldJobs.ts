import { QueueStillThrottledError } from '../errors/QueueStillThrottledError';
import { releaseHeldJobs } from '../queueState/heldJobRelease';
import { entriesDeclaring, entriesOfQueue, queueConfigFrom } from '../queueState/queueConfig';
import { AdminContext } from './adminContext';
import { explainJob, JobExplanation } from './explainJob';
import { dispatchDelayOf, readBucketStats } from './throttleStats';

/** Puts a queue's held jobs back in bullmq's lists (ThrottleAdmin.releaseHeld); resolves to how many went back. */
export async function releaseQueueHeld(admin: AdminContext, queue: string): Promise<number> {
  const { released, complete } = await releaseHeldJobs(admin.connections.runner, admin.keys, queue);
  if (!complete && released === 0) {
    const workers = entriesOfQueue(await admin.registry.liveEntries(), queue, admin.keys.prefix).length;
    throw new QueueStillThrottledError(
      `queue '${queue}' has ${workers} live ThrottledWorker(s) under prefix '${admin.keys.prefix}': they deliver its held jobs. `
      + 'Close them first (the last one to close puts the held jobs back itself), or release again once their declarations lapse.',
    );
  }
  return released;
}

/** Why a job is not delivered yet (ThrottleAdmin.explainJob): explainJob, given what it reads through the admin. */
export async function explainQueueJob(admin: AdminContext, queue: string, jobId: string): Promise<JobExplanation> {
  const now = await admin.connections.nowMs();
  const entries = await admin.registry.liveEntries(now);
  const config = queueConfigFrom(entries, queue, admin.keys.prefix);
  return explainJob(queue, jobId, {
    client: admin.connections.client, queueKeys: admin.keys.queue(queue), jobPrefix: admin.keys.bullmqBase(queue), config, nowMs: now,
    bullmqState: () => admin.connections.queueFor(queue).getJobState(jobId),
    bucket: (name, key) => readBucketStats(admin, name, key),
    processingMs: async (name) => (await dispatchDelayOf(admin, entriesDeclaring(entries, name)))?.processingMs ?? null,
  });
}
