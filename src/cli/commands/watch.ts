import { Command } from 'commander';
import { ThrottleAdmin } from '../../admin/ThrottleAdmin';
import { BucketStats, QueueStats, ThrottleStats } from '../../admin/types';
import { formatWindow } from '../../declarations/window';
import { UnknownQueueError } from '../../errors/UnknownQueueError';
import { UnknownThrottleError } from '../../errors/UnknownThrottleError';
import { bar, fields, formatBucketKey, formatCount, formatDuration, formatLimit, formatLimits, table } from '../format';
import { isConnectionError, RedisUnreachableError } from '../errors';
import { LiveView, FrameSink } from '../liveView';
import { parseWholeNumber } from '../options';
import { openSession } from '../connect';
import { globalsOf } from '../run';
import { formatHeld, formatJobCounts, formatWorkers } from './stats';

export const DEFAULT_INTERVAL_MS = 1000;
export const WATCH_TOP = 5;
const BAR_WIDTH = 20;

/** What one refresh of `watch` reads: the queue, each throttle in effect on it, and the buckets its rows show. */
export interface WatchSnapshot {
  queue: QueueStats;
  throttles: ThrottleStats[];
  /**
   * Per throttle name: the buckets read one by one, for what a throttle's totals cannot say. A keyed throttle's
   * limits hold per bucket, so its busiest buckets (most jobs waiting, at most WATCH_BUCKETS) are shown against
   * them; a rate or a concurrency has no window total at all, so an unkeyed one's bucket is read too.
   */
  buckets: Record<string, BucketStats[]>;
}

export const WATCH_BUCKETS = 3;

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
  const live = throttles.filter((t): t is ThrottleStats => t !== undefined);
  const buckets: Record<string, BucketStats[]> = {};
  await Promise.all(live.map(async (t) => {
    const keys = t.key ? t.topBuckets.slice(0, WATCH_BUCKETS).map((b) => b.key) : (t.rate || t.concurrency !== null ? [null] : []);
    buckets[t.name] = (await Promise.all(keys.map((key) => admin.throttleBucket(t.name, key).catch((error: unknown) => {
      if (error instanceof UnknownThrottleError) return undefined;
      throw error;
    })))).filter((b): b is BucketStats => b !== undefined);
  }));
  return { queue: stats, throttles: live, buckets };
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

/** How full one bucket is under each of its limits. */
function bucketFill(b: BucketStats): { kind: 'window' | 'rate' | 'concurrency'; label: string; counted: number; max: number }[] {
  return [
    ...b.limits.map((l) => ({ kind: 'window' as const, label: formatLimit(l), counted: l.counted, max: l.max })),
    ...(b.rate ? [{ kind: 'rate' as const, label: `rate ${b.rate.n} per ${formatWindow(b.rate.perMs)}, burst ${b.rate.burst}`, counted: b.rate.burst - b.rate.room, max: b.rate.burst }] : []),
    ...(b.inFlight ? [{ kind: 'concurrency' as const, label: `concurrency ${b.inFlight.max} (in flight)`, counted: b.inFlight.counted, max: b.inFlight.max }] : []),
  ];
}

/**
 * The throttles' rows. An unkeyed throttle: per limit a bar of the last window's deliveries against it (a rate
 * or a concurrency: what its bucket holds now). A keyed one: its limits hold per bucket, so each bar is the
 * busiest bucket's count against the limit, with the bucket named, and the line under it says which limit binds
 * each of the busiest buckets; deliveries over all buckets are events, not a fill.
 */
export function formatThrottleRows(throttles: readonly ThrottleStats[], buckets: Record<string, readonly BucketStats[]> = {}): string[] {
  if (throttles.length === 0) return ['no throttle in effect (no live ThrottledWorker declares one)'];
  const rows: string[][] = [['throttle', 'limit', 'counted', '', 'at limit / active', 'waiting']];
  const afterRow = new Map<number, string>();
  for (const t of throttles) {
    const read = buckets[t.name] ?? [];
    const first = rows.length;
    const push = (limit: string, cells: [string, string]) => rows.push([
      rows.length === first ? t.name : '', limit, ...cells,
      rows.length === first ? `${formatCount(t.bucketsAtLimit)} / ${formatCount(t.activeBuckets)}` : '',
      rows.length === first ? formatCount(t.waiting) : '',
    ]);
    if (t.key) {
      const busiest = read[0];
      for (const { label, counted, max } of busiest ? bucketFill(busiest) : []) {
        push(`${label} per bucket`, [bar(counted, max, BAR_WIDTH), `${formatCount(counted)}/${formatCount(max)} ${formatBucketKey(busiest.key)}`]);
      }
      if (!busiest) {
        const events = t.lastWindow.map((w) => `${formatCount(w.delivered)} in the last ${formatWindow(w.windowMs)}`).join(', ');
        push([formatLimits(t.limits, t.rate, t.concurrency), 'per bucket'].join(' '), ['no bucket waiting', events ? `deliveries over all buckets: ${events}` : '']);
      }
      const binding = read.map((b) => `${formatBucketKey(b.key)} ${formatCount(b.waiting)} waiting${b.bindingNow ? `, held by ${b.bindingNow}` : ''}`);
      if (binding.length > 0) afterRow.set(rows.length - 1, `busiest: ${binding.join(' · ')}`);
    } else {
      t.lastWindow.forEach((w) => push(formatLimit(w), [bar(w.delivered, w.max, BAR_WIDTH), `${formatCount(w.delivered)}/${formatCount(w.max)}`]));
      const bucket = read[0];
      // Its windows are the totals above; a rate or a concurrency is what the one bucket holds now.
      for (const { label, counted, max } of bucket ? bucketFill(bucket).filter((f) => f.kind !== 'window') : []) {
        push(label, [bar(counted, max, BAR_WIDTH), `${formatCount(counted)}/${formatCount(max)}`]);
      }
    }
  }
  const lines = table(rows, { align: ['left', 'left', 'left', 'left', 'right', 'right'] });
  const indent = ' '.repeat(Math.max(...rows.map((r) => r[0].length)) + 2);
  return lines.flatMap((line, i) => (afterRow.has(i) ? [line, `${indent}${afterRow.get(i)}`] : [line]));
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
    ...formatThrottleRows(snapshot.throttles, snapshot.buckets),
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
