import { Command, Option } from 'commander';
import http from 'node:http';
import { createDashboardHandler } from '../../dashboard/server/dashboardHandler';
import type { ConnectionInput } from '../../redis/connection';
import { clusterSeedsOf } from '../../redis/clusterSeeds';
import { openSession } from '../connect';
import { UsageError } from '../errors';
import { parseWholeNumber } from '../options';
import { globalsOf, print } from '../run';

export interface DashboardCommandOptions {
  port: string;
  host: string;
  writes?: boolean;
  queue?: string[];
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE'
      ? new UsageError(`--port ${port}: the port is in use on ${host}: choose another with --port (0 picks a free one).`)
      : error));
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/**
 * `bullmq-throttle dashboard`: the web dashboard on node:http until Ctrl-C. Redis is checked first (one line and
 * exit 1 when it cannot be reached, as every command); the server then keeps its own connection, which reconnects
 * by itself, since a dashboard outlives Redis restarts.
 */
export async function runDashboard(options: DashboardCommandOptions, command: Command, out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const globals = globalsOf(command);
  const port = parseWholeNumber('--port', options.port, 0, 65535);
  const session = await openSession(globals);
  const cluster = session.cluster;
  await session.close();
  const seeds = clusterSeedsOf(globals.redis);
  const connection: ConnectionInput = cluster ? { startupNodes: seeds.startupNodes, clusterOptions: { redisOptions: seeds.redisOptions } } : globals.redis[0];
  const handler = createDashboardHandler({
    connection, prefix: globals.prefix, throttlePrefix: globals.throttlePrefix,
    ...(globals.grantorRedis ? { grantor: { connection: globals.grantorRedis } } : {}),
    writes: options.writes === true,
    queues: options.queue ?? [],
  });
  const server = http.createServer(handler);
  try {
    const bound = await listen(server, port, options.host);
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    print(`bullmq-throttle dashboard on http://${host}:${bound}/ (${options.writes ? 'writes enabled' : 'read-only'}); Ctrl-C to stop`, out);
    if (!LOOPBACK.has(options.host)) {
      process.stderr.write(`bullmq-throttle: the dashboard has no authentication and listens on ${options.host}: anyone who reaches the port can read${options.writes ? ' and change' : ''} your throttles. Put it behind your app's authentication (createDashboardHandler) or a proxy.\n`);
    }
    await untilSignal();
  } finally {
    await handler.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('serve a live web dashboard: held jobs per queue; per throttle its limits and where they come from, a chart per limit, '
      + 'buckets active and at their limit, top waiting buckets; a page per bucket; why a job waits')
    .addOption(new Option('--port <port>', 'the port to listen on (0: a free one)').default('3000'))
    .addOption(new Option('--host <host>', 'the address to listen on (the dashboard has no authentication: keep it on loopback)').default('127.0.0.1'))
    .option('--writes', 'allow pausing, resuming, setting limits and releasing held jobs from the page')
    .option('--queue <name...>', 'queues to show even with no live ThrottledWorker (to release what a crashed worker left held)')
    .addHelpText('after', `
The page refreshes by itself (server-sent events, once a second). Its charts
sample each throttle's statistics once a second and keep the last hour in Redis,
so a restarted dashboard shows it again; no bucket is ever scanned. Read-only
unless --writes.`)
    .action(async (options: DashboardCommandOptions, command: Command) => runDashboard(options, command));
}
