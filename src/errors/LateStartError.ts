/**
 * Internal: a job's processor would have started more than h after the call that delivered it
 * (src/worker/lateStarts/startDeadlines.ts). It does not start: ThrottledWorker puts the job back held, as bullmq does a
 * job its processor rate-limited (no attempt made), gives back what it was counted in, and it is delivered again
 * when its buckets have room.
 */
export class LateStartError extends Error {
  constructor(jobId: string | undefined, deadlineMs: number) {
    super(`job ${jobId ?? '(no id)'} was not started: its processor would have started more than ${deadlineMs} ms (its start deadline) after its delivery; it is held again`);
    this.name = new.target.name;
  }
}
