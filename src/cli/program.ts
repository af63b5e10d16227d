import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerBucket } from './commands/bucket';
import { registerRelease } from './commands/release';
import { registerPause } from './commands/pause';
import { registerLimit } from './commands/limit';
import { registerWhy } from './commands/why';
import { registerStats } from './commands/stats';
import { registerThrottle } from './commands/throttle';
import { registerWatch } from './commands/watch';
import { registerDashboard } from './commands/dashboard';
import { DEFAULT_REDIS_URL, defaultRedisUrl, redisOptionParser, splitRedisUrls } from './options';

function packageVersion(): string {
  try {
    // src/cli and dist/cli both sit two levels under the package root.
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export interface ProgramIo {
  writeOut?: (text: string) => void;
  writeErr?: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}

/** The `bullmq-throttle` program. Errors reach the caller of parseAsync (commander's own as CommanderError). */
export function buildProgram(io: ProgramIo = {}): Command {
  const writeErr = io.writeErr ?? ((text: string) => process.stderr.write(text));
  const redisDefaults = splitRedisUrls(defaultRedisUrl(io.env));
  const program = new Command('bullmq-throttle')
    .description('See why BullMQ queues paced by bullmq-throttle are waiting: queues, throttles and buckets, once or live; put held jobs back (release).')
    .version(packageVersion(), '-V, --version')
    .addOption(new Option('--redis <url>', 'the Redis to read; repeat it (or separate URLs with commas) to give several seed nodes of a Redis Cluster')
      .default(redisDefaults, `$REDIS_URL, else ${DEFAULT_REDIS_URL}`)
      .argParser(redisOptionParser(redisDefaults)))
    .option('--cluster', 'connect as a Redis Cluster client (found out by itself when --redis is a cluster node, or when several are given)')
    .addOption(new Option('--prefix <prefix>', "the key prefix, as bullmq's prefix option").default('bull'))
    .option('--throttle-prefix <prefix>', "the throttle namespace, as the workers' throttlePrefix option (default: the prefix)")
    .option('--grantor-redis <url>', "the Redis of the workers' grantor option, when their throttles are counted on a Redis of their own")
    .option('--json', 'print the raw object as JSON instead of a table (watch: one JSON line per refresh)')
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({
      writeOut: io.writeOut ?? ((text) => process.stdout.write(text)),
      writeErr,
      // Commander's own errors (unknown option, missing argument…) as one line, like every other error.
      outputError: (text) => writeErr(`bullmq-throttle: ${text.replace(/^error:\s*/, '').replace(/\s*\n\s*/g, ' ').trim()}\n`),
    })
    .exitOverride()
    .showSuggestionAfterError(true)
    .addHelpText('after', `
Examples:
  bullmq-throttle stats orders
  bullmq-throttle throttle stripe-per-customer --top 20
  bullmq-throttle bucket stripe-per-customer acme
  bullmq-throttle bucket per-account json:42
  bullmq-throttle watch orders --redis redis://10.0.0.5:6379 --prefix bull
  bullmq-throttle stats '{orders}' --redis redis://10.0.0.5:7000 --redis redis://10.0.0.6:7000
  bullmq-throttle throttle stripe --throttle-prefix shared
  bullmq-throttle release orders

Exit status: 0 on success; 1, with one line on stderr, for an unknown queue or
throttle, bad arguments, a release refused while a ThrottledWorker of the
queue runs, or a Redis that cannot be reached.`);
  registerStats(program);
  registerThrottle(program);
  registerBucket(program);
  registerWatch(program);
  registerRelease(program);
  registerPause(program);
  registerLimit(program);
  registerWhy(program);
  registerDashboard(program);
  for (const command of program.commands) command.exitOverride().configureOutput(program.configureOutput());
  return program;
}
