import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { plural } from '../format';
import { runCommand, toJson } from '../run';

export interface ReleaseOptions {
  json?: boolean;
}

/** `bullmq-throttle release <queue>`: puts the queue's held jobs back into bullmq's wait / prioritized. */
export async function releaseCommand(admin: ThrottleAdmin, queue: string, options: ReleaseOptions = {}): Promise<string> {
  const released = await admin.releaseHeld(queue);
  return options.json ? toJson({ queue, released }) : `${plural(released, 'held job')} of queue ${queue} went back to bullmq's wait/prioritized`;
}

export function registerRelease(program: Command): void {
  program
    .command('release')
    .description("put a queue's held jobs back into bullmq's wait/prioritized, in queue order, for plain Workers (refused while a ThrottledWorker of the queue runs)")
    .argument('<queue>', 'the queue name')
    .action(async (queue: string, _options: unknown, command: Command) => {
      await runCommand(command, (admin, globals) => releaseCommand(admin, queue, { json: globals.json }));
    });
}
