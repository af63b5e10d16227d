import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { mostInAnyWindow } from '../../src/check/mostInAnyWindow';

/** One queue of the load: a ThrottledWorker (with one throttle) or a plain bullmq Worker. */
export interface LoadQueueSpec {
  label: string;
  kind: 'throttled' | 'plain';
  name: string;
  prefix: string;
  throttlePrefix?: string;
  leaseMs?: number;
  concurrency: number;
  /** The ThrottledWorker's throttle (default 'api', 10 000 per 1 s: it never binds). */
  throttle?: { name?: string; max: number; windowMs: number };
}

export type LoadConnection =
  | { kind: 'cluster'; seeds: { host: string; port: number }[]; clusterOptions?: ClusterOptions }
  | {
    kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string; redisOptions?: RedisOptions;
    /** The settings docs/redis.md asks of a Sentinel client: failoverDetector, and a reconnect (resending the command) on READONLY. */
    failoverSettings?: boolean;
  };

export interface FailoverLoadConfig {
  connection: LoadConnection;
  queues: LoadQueueSpec[];
  /** Jobs added to each queue per second. */
  ratePerSec: number;
  processMs: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** How long `finish` waits for every job added to be completed or failed. */
  settleMs: number;
  /** How long `finish` waits for each worker.close() (default 20 s): one still open then is reported in closeHung. */
  closeTimeoutMs?: number;
}

export interface LoadQueueResult {
  label: string;
  added: number;
  addFailures: number;
  /** processedOn (Redis clock) and startedAt: the moment the processor started, on the load process's clock. */
  starts: { id: string; processedOn: number; startedAt: number; attempt: number }[];
  /** Jobs whose processor returned (a job may appear twice if it ran twice). */
  returned: string[];
  completed: string[];
  failed: { id: string; reason: string }[];
  errorCount: number;
  /** Distinct messages of the worker's `error` events (the first 20). */
  errors: string[];
  /** Each job's state at the end (getJobState). */
  states: Record<string, string>;
}

export interface LoadResult {
  queues: LoadQueueResult[];
  /** Labels of the queues whose worker.close() had not resolved after closeTimeoutMs. */
  closeHung: string[];
  unhandled: string[];
  uncaught: string[];
}

let loads = 0;

/** The load running in its child process (test/support/failoverLoadProcess.ts). */
export class FailoverLoad {
  private readonly result: Promise<LoadResult>;

  private constructor(private readonly child: ChildProcess, readonly ready: Promise<void>, private readonly stderrTail: () => string, readonly logFile: string) {
    const stderr = stderrTail;
    this.result = new Promise<LoadResult>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.startsWith('@@RESULT ')) resolve(JSON.parse(line.slice('@@RESULT '.length)) as LoadResult);
      });
      child.on('exit', (code, signal) => reject(new Error(`the load process exited (${code ?? signal}) without a result:\n${stderr().slice(-4_000)}`)));
    });
    this.result.catch(() => undefined);
  }

  static start(config: FailoverLoadConfig): FailoverLoad {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'failoverLoadProcess.ts')], {
      env: { ...process.env, FAILOVER_LOAD: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => { stderr = (stderr + String(chunk)).slice(-20_000); });
    // The load process's whole log (its workers' info and warning lines; debug ones with FAILOVER_LOAD_DEBUG=1), for a
    // failure to be read after: FAILOVER_LOAD_LOG names the file, else one in the temp directory, named on failure.
    const logFile = process.env.FAILOVER_LOAD_LOG ?? join(tmpdir(), `bullmq-throttle-failover-load-${process.pid}-${++loads}.log`);
    child.stderr!.pipe(createWriteStream(logFile, { flags: 'a' }));
    const ready = new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => { if (line === '@@READY') resolve(); });
      child.on('exit', (code, signal) => reject(new Error(`the load process exited (${code ?? signal}) before it was ready:\n${stderr.slice(-4_000)}`)));
    });
    ready.catch(() => undefined);
    return new FailoverLoad(child, ready, () => stderr, logFile);
  }

  /** Stops adding jobs, waits for the ones added to finish (within settleMs), and resolves with what was seen. */
  async finish(): Promise<LoadResult> {
    this.child.stdin!.write('stop-adding\nfinish\n');
    return this.result;
  }

  /** What the load process printed on stderr lately (its progress, with FAILOVER_LOAD_DEBUG=1). */
  get stderr(): string {
    return this.stderrTail();
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** What a queue's run says about the guarantees, for assertions and the printed comparison. */
export interface QueueVerdict {
  label: string;
  added: number;
  completed: number;
  /** Jobs added that did not end completed (state at the end), among those Redis still has. */
  notCompleted: string[];
  /**
   * Jobs Redis no longer has at the end ('unknown'): their add was acknowledged by a master whose writes were then
   * lost (a frozen master that accepts writes after SIGCONT until it learns of its demotion; a replica promoted
   * without the last writes). Nothing a worker does can deliver them.
   */
  lostByRedis: string[];
  /** Jobs whose processor returned but which ended failed. */
  failedAfterReturn: string[];
  /** Jobs whose processor ran more than once. */
  ranTwice: string[];
  /** Completed events per job beyond one. */
  completedTwice: string[];
  /** The longest pause in job starts that ends after the fault and before `until` (ms), and the starts between. */
  gapMs: number;
  startsAfterFault: number;
  /** The most processedOn values, and the most processor starts, in any window of the throttle's W. */
  mostInWindow: number;
  mostStartsInWindow: number;
}

/** `faultAt`..`until`: the time of the fault and of the next one (gaps and starts are counted between them). */
export function verdict(result: LoadQueueResult, faultAt: number, windowMs: number, until = Infinity): QueueVerdict {
  const counts = (ids: string[]) => ids.reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<string, number>());
  const returned = new Set(result.returned);
  const runs = counts(result.starts.map((s) => s.id));
  const completions = counts(result.completed);
  const times = result.starts.map((s) => s.processedOn).sort((a, b) => a - b);
  let gapMs = 0;
  for (let i = 1; i < times.length; i++) {
    if (times[i] >= faultAt && times[i] < until) gapMs = Math.max(gapMs, times[i] - Math.max(times[i - 1], faultAt - 1_000));
  }
  return {
    label: result.label,
    added: result.added,
    completed: Object.values(result.states).filter((s) => s === 'completed').length,
    notCompleted: Object.entries(result.states).filter(([, s]) => s !== 'completed' && s !== 'unknown').map(([id, s]) => `${id}:${s}`),
    lostByRedis: Object.entries(result.states).filter(([, s]) => s === 'unknown').map(([id]) => id),
    failedAfterReturn: Object.entries(result.states).filter(([id, s]) => s === 'failed' && returned.has(id)).map(([id]) => id),
    ranTwice: [...runs].filter(([, n]) => n > 1).map(([id]) => id),
    completedTwice: [...completions].filter(([, n]) => n > 1).map(([id]) => id),
    gapMs,
    startsAfterFault: times.filter((t) => t > faultAt && t < until).length,
    mostInWindow: mostInAnyWindow(times, windowMs),
    mostStartsInWindow: mostInAnyWindow(result.starts.map((s) => s.startedAt), windowMs),
  };
}

export function describeVerdict(v: QueueVerdict, result: LoadQueueResult): string {
  return `${v.label}: added ${v.added}, completed ${v.completed}, lost by Redis ${v.lostByRedis.length}, not completed ${v.notCompleted.length}${v.notCompleted.length ? ` (${v.notCompleted.slice(0, 5).join(' ')})` : ''}, `
    + `failed after the processor returned ${v.failedAfterReturn.length}, ran twice ${v.ranTwice.length}, completed twice ${v.completedTwice.length}, `
    + `gap in starts after the fault ${v.gapMs} ms, most in a window ${v.mostInWindow} (processedOn) / ${v.mostStartsInWindow} (processor starts), error events ${result.errorCount}`
    + `${result.errors.length ? ` [${result.errors.slice(0, 4).map((e) => e.slice(0, 120)).join(' | ')}]` : ''}`;
}
