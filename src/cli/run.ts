import { Command } from 'commander';
import { ThrottleAdmin } from '../admin/ThrottleAdmin';
import { withSession } from './connect';
import { isConnectionError, RedisUnreachableError } from './errors';
import { GlobalOptions } from './options';

export function globalsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals() as GlobalOptions;
}

/** Prints text as one block ending in a newline. */
export function print(text: string, out: NodeJS.WritableStream = process.stdout): void {
  out.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** JSON for one-shot commands: indented, one value. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** Opens a session from the global options, runs a command's text function, prints its text, closes. */
export async function runCommand(command: Command, fn: (admin: ThrottleAdmin, globals: GlobalOptions) => Promise<string>): Promise<void> {
  const globals = globalsOf(command);
  const text = await withSession(globals, async (session) => {
    try {
      return await fn(session.admin, globals);
    } catch (error) {
      if (isConnectionError(error)) throw new RedisUnreachableError(`lost the connection to Redis at ${session.redisUrl}: ${(error as Error).message}`);
      throw error;
    }
  });
  print(text);
}
