import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { BucketStats, ThrottleStats } from '../../admin/types';
import { readTopBuckets, unlessGone } from '../../admin/unlessGone';
import { UnknownQueueError } from '../../errors/UnknownQueueError';
import { isConnectionError, RedisUnreachableError } from '../errors';
import { LiveFrames, PLAIN_WIDTH, TerminalOut } from '../../terminal/LiveFrames';
import { parseWholeNumber } from '../options';
import { openSession } from '../connect';
import { globalsOf } from '../run';
import { clock, formatWatchFrame, WatchSnapshot } from './watchFrame';

export type { WatchSnapshot } from './watchFrame';

export const DEFAULT_INTERVAL_MS = 1000;
export const WATCH_TOP = 5;
/** A keyed throttle's busiest buckets read one by one at each refresh, to be shown against the per-bucket limits. */
export const WATCH_BUCKETS = 3;

export async function watchSnapshot(admin: ThrottleAdmin, queue: string, options: { top?: number } = {}): Promise<WatchSnapshot> {
  const stats = await admin.queueStats(queue);
  const throttles = await Promise.all(stats.throttles.map((t) => unlessGone(admin.throttleStats(t.name, { top: options.top ?? WATCH_TOP }))));
  const live = throttles.filter((t): t is ThrottleStats => t !== null);
  const buckets: Record<string, BucketStats[]> = {};
  await Promise.all(live.map(async (t) => {
    buckets[t.name] = await readTopBuckets(admin, t, WATCH_BUCKETS);
  }));
  return { queue: stats, throttles: live, buckets };
}

export interface WatchOptions {
  json?: boolean;
  intervalMs?: number;
  /** Columns the view's lines may use (default PLAIN_WIDTH). */
  width?: number;
}

/** One refresh of `watch` as text: a frame of the view, or one line of JSON. */
export async function watchCommand(admin: ThrottleAdmin, queue: string, options: WatchOptions = {}): Promise<string> {
  const snapshot = await watchSnapshot(admin, queue);
  if (options.json) return JSON.stringify(snapshot);
  return formatWatchFrame(snapshot, { width: options.width ?? PLAIN_WIDTH, intervalMs: options.intervalMs ?? DEFAULT_INTERVAL_MS, prefix: admin.keys.prefix }).join('\n');
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * Refreshes every `intervalMs` until `signal` aborts. The first refresh's errors end the watch (an unknown
 * queue, say); later a queue that goes away is shown as such and watched on; a lost Redis ends it.
 */
export async function runWatch(admin: ThrottleAdmin, queue: string, options: Omit<WatchOptions, 'width'> & { out: TerminalOut; signal: AbortSignal }): Promise<void> {
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const frames = new LiveFrames(options.out);
  let first = true;
  let next = Date.now();
  while (!options.signal.aborted) {
    let text: string;
    try {
      // The width is read at each refresh: the terminal may have been resized.
      text = await watchCommand(admin, queue, { json: options.json, intervalMs, width: frames.width });
    } catch (error) {
      if (first || !(error instanceof UnknownQueueError)) throw error;
      text = options.json
        ? JSON.stringify({ queue: null, throttles: [], error: error.message })
        : `bullmq-throttle watch  queue ${queue}  ${clock(Date.now())}\n${error.message}`;
    }
    if (options.signal.aborted) break;
    if (options.json) options.out.write(`${text}\n`);
    else frames.draw(text.split('\n'));
    first = false;
    next += intervalMs;
    const now = Date.now();
    if (next < now) next = now; // a slow refresh: start the next one now rather than catch up in a burst
    await sleep(next - now, options.signal);
  }
  // Ctrl-C echoes '^C' where the cursor is: end that line, so the shell's prompt starts on its own.
  if (frames.inPlace && !options.json && !first) {
    frames.done();
    options.out.write('\n');
  }
}

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('a live view of a queue: job counts, held jobs, and per throttle its buckets at their limit, jobs waiting, '
      + 'and its busiest buckets against each per-bucket limit with the limit holding each back')
    .argument('<queue>', 'the queue name')
    .option('--interval <ms>', 'refresh every this many milliseconds', String(DEFAULT_INTERVAL_MS))
    .addHelpText('after', `
On a terminal the view is redrawn in place; otherwise one snapshot is printed
per refresh (with --json, one JSON line { queue, throttles } per refresh).
For a keyed throttle, each of its busiest buckets (most jobs waiting) is shown
against each per-bucket limit, with the limit holding it back; for an unkeyed
throttle, what its one bucket counts now. Lines fit the terminal's width.
Ctrl-C quits.`)
    .action(async (queue: string, options: { interval: string }, command: Command) => {
      const intervalMs = parseWholeNumber('--interval', options.interval, 100, 3_600_000);
      const globals = globalsOf(command);
      const session = await openSession(globals);
      const controller = new AbortController();
      const stop = () => controller.abort();
      // \`on\`, not \`once\`: while the cursor is hidden, log-update's cursor restorer (signal-exit) re-raises a
      // signal that has no other listener, which would kill the process before the session is closed.
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      try {
        await runWatch(session.admin, queue, { json: globals.json, intervalMs, out: process.stdout, signal: controller.signal });
      } catch (error) {
        if (isConnectionError(error)) throw new RedisUnreachableError(`lost the connection to Redis at ${session.redisUrl}: ${(error as Error).message}`);
        throw error;
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        await session.close();
      }
    });
}
