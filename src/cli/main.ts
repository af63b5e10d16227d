#!/usr/bin/env node
/** `bullmq-throttle`: the command line. Every failure is one line on stderr and exit status 1. */
import { CommanderError } from 'commander';
import { describeError } from './errors';
import { buildProgram } from './program';

function fail(error: unknown): number {
  process.stderr.write(`bullmq-throttle: ${describeError(error)}\n`);
  if (process.env.BULLMQ_THROTTLE_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return 1;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (error) {
    // Commander has printed its own message (or the help, or the version) already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    return fail(error);
  }
}

// A reader that goes away (`| head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
});
process.on('uncaughtException', (error) => process.exit(fail(error)));
process.on('unhandledRejection', (error) => process.exit(fail(error)));

main(process.argv).then((code) => {
  process.exitCode = code;
  // Everything is closed by now; should a stray handle remain, it does not keep the process up.
  setTimeout(() => process.exit(code), 1000).unref();
});
