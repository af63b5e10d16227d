/**
 * A job's processor succeeded, but its completion could not reach Redis before the worker closed (a failover
 * under way, the connection lost). The job is not failed: it stays active until its lock lapses, then bullmq's
 * stalled-job check moves it back to wait and it runs again (or finds it completed, if the completion did land).
 */
export class CompletionInDoubtError extends Error {
  constructor(
    message: string,
    /** The id of the job whose completion got no answer from Redis. */
    readonly jobId: string,
    /** The last Redis or connection error the completion met (such as "Connection is closed"). */
    readonly cause?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
