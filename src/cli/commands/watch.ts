import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { QueueStats, ThrottleStats } from '../../admin/types';
import { UnknownQueueError } from '../../errors/UnknownQueueError';
import { UnknownThrottleError } from '../../errors/UnknownThrottleError';
import { bar, fields, formatBucketKey, formatCount, formatDuration, formatLimit, table } from '../format';
import { isConnectionError, RedisUnreachableError } from '../errors';
import { LiveView, FrameSink } from '../liveView';
import { parseWholeNumber } from '../options';
import { openSession } from '../connect';
import { globalsOf } from '../run';
import { formatHeld, formatJobCounts, formatWorkers } from './stats';

export const DEFAULT_INTERVAL_MS = 1000;
export const WATCH_TOP = 5;
const BAR_WIDTH = 20;

/** What one refresh of `watch` reads: the queue, and each throttle in effect on it. */
export interface WatchSnapshot {
  queue: QueueStats;
  throttles: ThrottleStats[];
}

export async function watchSnapshot(admin: ThrottleAdmin, queue: string, options: { top?: number } = {}): Promise<WatchSnapshot> {
  const stats = await admin.queueStats(queue);
  const throttles = await Promise.all(stats.throttles.map(async (t) => {
    try {
      return await admin.throttleStats(t.name, { top: options.top ?? WATCH_TOP });
    } catch (error) {
      // Its last declaring worker went away between the two reads: it is no longer in effect.
      if (error instanceof UnknownThrottleError) return undefined;
      throw error;
    }
  }));
  return { queue: stats, throttles: throttles.filter((t): t is ThrottleStats => t !== undefined) };
}

export interface WatchFormatOptions {
  intervalMs?: number;
  prefix?: string;
}

function formatInterval(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : formatDuration(ms);
}

function clock(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/** The throttles' rows: per limit a bar of the last window's deliveries against the limit, then the top waiting buckets. */
export function formatThrottleRows(throttles: readonly ThrottleStats[]): string[] {
  if (throttles.length === 0) return ['no throttle in effect (no live ThrottledWorker declares one)'];
  const rows: string[][] = [['throttle', 'limit', 'last window', '', 'at limit / active', 'waiting']];
  const topAfterRow = new Map<number, string>();
  for (const t of throttles) {
    t.lastWindow.forEach((w, i) => {
      rows.push([
        i === 0 ? t.name : '',
        `${formatLimit(w)}${t.key ? ' per bucket' : ''}`,
        bar(w.delivered, w.max, BAR_WIDTH),
        `${formatCount(w.delivered)}/${formatCount(w.max)}`,
        i === 0 ? `${formatCount(t.bucketsAtLimit)} / ${formatCount(t.activeBuckets)}` : '',
        i === 0 ? formatCount(t.waiting) : '',
      ]);
    });
    if (t.topBuckets.length > 0) {
      topAfterRow.set(rows.length - 1, `top waiting: ${t.topBuckets.map((b) => `${formatBucketKey(b.key)} ${formatCount(b.waiting)}`).join(' · ')}`);
    }
  }
  const lines = table(rows, { align: ['left', 'left', 'left', 'right', 'right', 'right'] });
  const indent = ' '.repeat(Math.max(...rows.map((r) => r[0].length)) + 2);
  return lines.flatMap((line, i) => (topAfterRow.has(i) ? [line, `${indent}${topAfterRow.get(i)}`] : [line]));
}

/** One frame of the human view. */
export function formatWatch(snapshot: WatchSnapshot, options: WatchFormatOptions = {}): string {
  const q = snapshot.queue;
  const held = formatHeld(q) + (q.oldestHeldMs === null ? '' : ` · oldest waiting ${formatDuration(q.oldestHeldMs)}`);
  return [
    `bullmq-throttle watch  queue ${q.queue}${options.prefix ? `  prefix ${options.prefix}` : ''}  ${clock(q.at)}`
      + `  every ${formatInterval(options.intervalMs ?? DEFAULT_INTERVAL_MS)}  (Ctrl-C to quit)`,
    ...fields([
      ['jobs', formatJobCounts(q.counts)],
      ['throttled', held],
      ['workers', formatWorkers(q)],
    ]),
    '',
    ...formatThrottleRows(snapshot.throttles),
  ].join('\n');
}

export interface WatchOptions {
  json?: boolean;
  intervalMs?: number;
}

/** One refresh of `watch` as text: a frame of the view, or one line of JSON. */
export async function watchCommand(admin: ThrottleAdmin, queue: string, options: WatchOptions = {}): Promise<string> {
  const snapshot = await watchSnapshot(admin, queue);
  return options.json ? JSON.stringify(snapshot) : formatWatch(snapshot, { intervalMs: options.intervalMs, prefix: admin.keys.prefix });
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
export async function runWatch(admin: ThrottleAdmin, queue: string, options: WatchOptions & { out: FrameSink; signal: AbortSignal }): Promise<void> {
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const view = new LiveView(options.out);
  let first = true;
  let next = Date.now();
  while (!options.signal.aborted) {
    let text: string;
    try {
      text = await watchCommand(admin, queue, { json: options.json, intervalMs });
    } catch (error) {
      if (first || !(error instanceof UnknownQueueError)) throw error;
      text = options.json
        ? JSON.stringify({ queue: null, throttles: [], error: error.message })
        : `bullmq-throttle watch  queue ${queue}  ${clock(Date.now())}\n${error.message}`;
    }
    if (options.signal.aborted) break;
    if (options.json) options.out.write(`${text}\n`);
    else view.render(text);
    first = false;
    next += intervalMs;
    const now = Date.now();
    if (next < now) next = now; // a slow refresh: start the next one now rather than catch up in a burst
    await sleep(next - now, options.signal);
  }
  // Ctrl-C echoes '^C' where the cursor is: end that line, so the shell's prompt starts on its own.
  if (view.inPlace && !options.json && !first) options.out.write('\n');
}

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description("a live view of a queue: job counts, held jobs, and per throttle its last window's use against each limit, "
      + 'buckets at their limit, jobs waiting and the top waiting buckets')
    .argument('<queue>', 'the queue name')
    .option('--interval <ms>', 'refresh every this many milliseconds', String(DEFAULT_INTERVAL_MS))
    .addHelpText('after', `
On a terminal the view is redrawn in place; otherwise one snapshot is printed
per refresh (with --json, one JSON line { queue, throttles } per refresh).
For a keyed throttle the bar is the last window's deliveries of all its
buckets together against the per-bucket limit; for an unkeyed throttle, what
its one bucket counts. Ctrl-C quits.`)
    .action(async (queue: string, options: { interval: string }, command: Command) => {
      const intervalMs = parseWholeNumber('--interval', options.interval, 100, 3_600_000);
      const globals = globalsOf(command);
      const session = await openSession(globals);
      const controller = new AbortController();
      const stop = () => controller.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
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
