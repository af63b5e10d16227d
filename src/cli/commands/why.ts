import { Command } from 'commander';
import { JobExplanation } from '../../admin/explainJob';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { formatWindow } from '../../declarations/windowText';
import { formatBucketKey, formatRelative, formatRemaining, table } from '../format';
import { runCommand, toJson } from '../run';

/** A bucket's room column: its pause, else when room returns, on the clock of the bucket's own read. */
function roomOf(b: JobExplanation['buckets'][number]): string {
  if (b.paused) return `paused ${formatRemaining(b.paused.until, b.at)}`;
  if (b.nextRoomAt === null) return 'when resumed';
  return b.nextRoomAt <= b.at ? 'room now' : formatRelative(b.nextRoomAt, b.at);
}

export function formatExplanation(e: JobExplanation): string {
  const lines = [`job ${e.jobId} of queue ${e.queue}: ${e.state}`, `  ${e.reason}`];
  if (e.buckets.length > 0) {
    lines.push(...table([
      ['bucket', 'counted', 'room'],
      ...e.buckets.map((b) => [
        `${b.throttle} ${formatBucketKey(b.key)}${b.holdsIt ? ' (holds it)' : ''}`,
        [...b.limits.map((l) => `${l.counted}/${l.max} per ${formatWindow(l.windowMs)}`), ...(b.rate ? [`rate: ${b.rate.room} may go`] : [])].join(', '),
        roomOf(b),
      ]),
    ], { indent: '  ' }));
  }
  return lines.join('\n');
}

/** `bullmq-throttle why <queue> <jobId>`: why a job is not delivered yet. */
export async function whyCommand(admin: ThrottleAdmin, queue: string, jobId: string, options: { json?: boolean } = {}): Promise<string> {
  const explanation = await admin.explainJob(queue, jobId);
  return options.json ? toJson(explanation) : formatExplanation(explanation);
}

export function registerWhy(program: Command): void {
  program
    .command('why')
    .description('why a job is not delivered yet: the bucket(s) holding it, what each counts, when room returns')
    .argument('<queue>', 'the queue name')
    .argument('<jobId>', 'the job id')
    .action(async (queue: string, jobId: string, _options: unknown, command: Command) => {
      await runCommand(command, (admin, globals) => whyCommand(admin, queue, jobId, { json: globals.json }));
    });
}
