import type { Logger } from 'pino';
import { QueueThrottleKeys } from '../keys/ThrottleKeys';
import { ScriptRunner } from '../lua/scripts';
import { runReleaseInFlight } from '../lua/calls/releaseInFlight';
import { PendingRequest, RequestBatcher } from '../redis/requestBatcher';

/**
 * Tells Redis that jobs this worker ran have ended, so that the concurrency they held in their buckets
 * returns at once (lua/releaseInFlight-1.lua) and the classes waiting on those buckets wake. Ends that
 * arrive while a call is in flight go together in the next. A release that fails is not retried: the
 * delivery script finds a full bucket's ended jobs by itself within a second (lua/includes/inFlightCounter.lua),
 * so a lost release costs a second of that bucket's room, never its limit.
 */
export class InFlightRelease {
  private readonly batcher = new RequestBatcher<string, void>((batch) => this.serve(batch), 256, 1);
  private lastReportMs = 0;

  constructor(
    private readonly runner: () => ScriptRunner | undefined,
    private readonly queueKeys: QueueThrottleKeys,
    private readonly logger: Logger,
  ) {}

  /** Resolves once the job's release was sent and answered, or failed (reported at most once a minute). */
  jobEnded(jobId: string): Promise<void> {
    return this.batcher.submit(jobId);
  }

  private async serve(batch: PendingRequest<string, void>[]): Promise<void> {
    const runner = this.runner();
    try {
      if (runner) await runReleaseInFlight(runner, { inFlight: this.queueKeys.inFlight, queueBase: this.queueKeys.base, jobIds: batch.map((p) => p.request) });
    } catch (error) {
      const now = Date.now();
      if (now - this.lastReportMs >= 60_000) {
        this.lastReportMs = now;
        this.logger.warn({ err: error, jobs: batch.length }, 'could not release the concurrency of ended jobs; their buckets find them ended within a second');
      }
    }
    for (const p of batch) p.resolve();
  }
}
