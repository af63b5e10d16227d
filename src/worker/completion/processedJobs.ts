import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { RetryAfterError } from '../../errors/RetryAfterError';
import { encodeSegment } from '../../keys/keyEncoding';
import { QueueThrottleKeys, ThrottleKeys } from '../../keys/ThrottleKeys';
import { ScriptRunner } from '../../lua/scripts';
import { RedisClient } from '../../redis/connection';
import type { Delivery } from '../../delivery/Delivery';
import { DispatchDelay } from './dispatchDelay';
import { JobClassifier } from '../../queueState/jobClassifier';
import { QueueConfig } from '../../queueState/queueConfig';
import { bucketsToPause, pauseBuckets } from './retryAfterPause';
import { lowerAdaptiveLimits } from './adaptiveSignal';
import type { SlowDownError } from '../../errors/SlowDownError';

/** What ProcessedJobs needs of its connected gate. */
export interface ProcessedJobsContext {
  readonly queue: string;
  readonly logger: Logger;
  readonly keys: ThrottleKeys;
  readonly queueKeys: QueueThrottleKeys;
  readonly workerId: string;
  readonly declarationTtlMs: number;
  /** The config the worker holds now (undefined before it has one). */
  config(): QueueConfig | undefined;
  readonly classifier: JobClassifier;
  /** Runs in the throttle namespace's slot: the worker's own connection, or the grantor option's. */
  readonly namespaceRunner: ScriptRunner;
  readonly workerClient: RedisClient;
  readonly delivery: Delivery;
  /** The gate's, which its processors' starts and runs are noted in (ThrottledWorker) from before it connects. */
  readonly dispatchDelay: DispatchDelay;
}

/**
 * What becomes of the jobs a ThrottledWorker runs, from the moment its processor is called: their dispatch delay
 * and run time (throttleStats), a cost that cannot be counted (the job fails instead of running), the end that
 * gives back a concurrency slot, and the pause a RetryAfterError asks for.
 */
export class ProcessedJobs {
  constructor(private readonly context: ProcessedJobsContext) {}

  /**
   * Why a delivered job cannot be run, if so: its cost in a throttle is missing or could never fit (jobCost; it
   * was delivered counting 0 there). The processor does not run; the job fails without retries.
   */
  costFailure(job: Job): string | undefined {
    const config = this.context.config();
    if (!config || !config.throttles.some((t) => t.costSpec)) return undefined;
    const raw = job as unknown as { opts: unknown; priority?: number; data: unknown; name: string; id?: string };
    return this.context.classifier.place({
      id: String(raw.id), name: raw.name ?? null, data: JSON.stringify(raw.data ?? null), opts: JSON.stringify(raw.opts ?? {}),
      priority: String(raw.priority ?? 0), storedAttributes: null,
    }, config).costError;
  }

  /** A job this worker ran has ended (completed, failed, moved): the concurrency it held returns. */
  jobEnded(jobId: string | undefined): Promise<void> {
    const counted = this.context.config()?.throttles.some((t) => t.maxInFlight !== undefined);
    if (!counted || jobId === undefined) return Promise.resolve();
    return this.context.delivery.jobEnded(jobId);
  }

  /** This worker's dispatch delay, in the queue's slot, for throttleStats (lasts a few heartbeats). */
  async publishDispatchDelay(): Promise<void> {
    const delay = this.context.dispatchDelay.percentiles();
    const client = this.context.workerClient;
    if (!delay) return;
    const key = this.context.queueKeys.dispatchDelays;
    await client.hset(key, this.context.workerId, `${delay.p50} ${delay.p99} ${delay.samples} ${Date.now()} ${delay.processingMs === null ? '-' : delay.processingMs.toFixed(1)}`);
    await client.pexpire(key, this.context.declarationTtlMs * 3);
  }

  /**
   * A processor threw RetryAfterError: every bucket the job draws from (or the named throttle's) pauses for the
   * error's time, for every worker (lua/pauseThrottle-2.lua). The job itself goes back through bullmq's
   * RateLimitError path (ThrottledWorker.handleFailed), and is held again in its paused bucket.
   */
  async retryAfter(job: Job, error: RetryAfterError): Promise<void> {
    const config = this.context.config();
    const runner = this.context.namespaceRunner;
    if (!config) return;
    const { logger, queue } = this.context;
    const buckets = bucketsToPause(job, error, this.context.classifier, config);
    if (buckets.length === 0) {
      logger.warn({ queue, jobId: job.id, throttle: error.throttle }, 'RetryAfterError names no bucket of this job: nothing paused, the job goes back to wait');
      return;
    }
    await pauseBuckets(runner, this.context.keys, buckets, error.retryAfterMs);
    await this.lower(job, buckets, config);
    // Leased, the queue's pools of those buckets hold tokens leased before the pause: marked paused in the queue's
    // slot too (expiring with the pause, on that node's clock), so that no delivery call spends them meanwhile.
    const client = this.context.workerClient;
    if (this.context.delivery.mode === 'leased') {
      for (const { name, segment } of buckets) {
        await client.set(this.context.queueKeys.leasedPause(`${encodeSegment(name)}=${segment}`), '1', 'PX', error.retryAfterMs);
      }
    }
    logger.info({ queue, jobId: job.id, buckets, forMs: error.retryAfterMs }, 'buckets paused by RetryAfterError');
  }

  /**
   * A processor threw SlowDownError (a 429 without Retry-After): the live limit of each adaptive throttle the job
   * draws from (or the named one's) is lowered in the job's bucket. The job goes back as for RetryAfterError.
   */
  async slowDown(job: Job, error: SlowDownError): Promise<void> {
    const config = this.context.config();
    if (!config) return;
    const buckets = bucketsToPause(job, error, this.context.classifier, config);
    if (!buckets.some((b) => config.throttles.some((t) => t.name === b.name && t.adaptiveSpec))) {
      this.context.logger.warn({ queue: this.context.queue, jobId: job.id, throttle: error.throttle },
        'SlowDownError names no adaptive throttle of this job (declare one with .adaptive({ min })): no limit lowered, the job goes back to wait');
      return;
    }
    await this.lower(job, buckets, config);
  }

  private async lower(job: Job, buckets: readonly { name: string; segment: string }[], config: QueueConfig): Promise<void> {
    const lowered = await lowerAdaptiveLimits(this.context.namespaceRunner, this.context.keys, config, buckets);
    if (lowered.length > 0) this.context.logger.info({ queue: this.context.queue, jobId: job.id, lowered }, 'adaptive limits lowered by a 429');
  }
}
