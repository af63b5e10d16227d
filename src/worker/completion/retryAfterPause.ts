import type { Job } from 'bullmq';
import { setPause } from '../../queueState/throttlePauses';
import { classBuckets } from '../../keys/classMember';
import { encodeSegment } from '../../keys/keyEncoding';
import { ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { RetryAfterError } from '../../errors/RetryAfterError';
import { JobClassifier } from '../../queueState/jobClassifier';
import { QueueConfig } from '../../queueState/queueConfig';

/**
 * The buckets a RetryAfterError pauses (a SlowDownError lowers, of adaptive throttles): every bucket the job draws
 * from under the queue's config, or only the bucket of the throttle the error names. Worked out as the job was
 * classified (its key values, its stored attributes).
 */
export function bucketsToPause(job: Job, error: Pick<RetryAfterError, 'throttle'>, classifier: JobClassifier, config: QueueConfig): { name: string; segment: string }[] {
  const raw = job as unknown as { opts: unknown; priority?: number; data: unknown; name: string; id?: string };
  const placement = classifier.place({
    id: String(raw.id), name: raw.name ?? null, data: JSON.stringify(raw.data ?? null), opts: JSON.stringify(raw.opts ?? {}),
    priority: String(raw.priority ?? 0), storedAttributes: null,
  }, config);
  const buckets = classBuckets(placement.member).map((b) => ({ encoded: b.encodedName, segment: b.segment }));
  return config.throttles
    .filter((t) => error.throttle === undefined || t.name === error.throttle)
    .flatMap((t) => buckets.filter((b) => b.encoded === encodeSegment(t.name)).map((b) => ({ name: t.name, segment: b.segment })));
}

/** Pauses each bucket for the error's time, on the Redis clock of the namespace (lua/pauseThrottle-2.lua). */
export async function pauseBuckets(runner: ScriptRunner, keys: ThrottleKeys, buckets: readonly { name: string; segment: string }[], forMs: number): Promise<void> {
  for (const { name, segment } of buckets) await setPause(runner, keys, name, segment, 0, forMs);
}
