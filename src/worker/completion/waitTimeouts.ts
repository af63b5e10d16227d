/**
 * Jobs a delivery call handed over to be failed, not run: held past their throttle's maxWait (lua/includes/
 * deadlines.lua), marked in their hash's field thw with the slot's lock token and why. Noted as the reply comes,
 * taken when bullmq calls the job's processor (ThrottledWorker.callProcessJob), which fails it instead.
 */
export class WaitTimeouts {
  private readonly byJob = new Map<string, { token: string; reason: string }>();

  /** The delivered jobs of a reply: their hash fields as a flat array (name, value, ...). */
  note(jobs: readonly { id: string; fields: readonly string[] }[]): void {
    for (const job of jobs) {
      const fields = job.fields;
      for (let i = 0; i + 1 < fields.length; i += 2) {
        if (fields[i] !== 'thw') continue;
        const marked = String(fields[i + 1]);
        const bar = marked.indexOf('|');
        if (bar > 0) this.byJob.set(job.id, { token: marked.slice(0, bar), reason: marked.slice(bar + 1) });
      }
    }
  }

  /**
   * Why the job delivered with this lock token must fail, once; undefined for a job to run (a job failed this way
   * and retried later keeps its field, with a token of the past).
   */
  take(jobId: string | undefined, token: string): string | undefined {
    if (jobId === undefined) return undefined;
    const marked = this.byJob.get(jobId);
    if (!marked) return undefined;
    this.byJob.delete(jobId);
    return marked.token === token ? marked.reason : undefined;
  }
}
