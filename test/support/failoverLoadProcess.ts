/**
 * A child process of the failover tests (test/support/failoverLoad.ts): ThrottledWorkers and plain bullmq Workers
 * side by side, each queue fed a steady stream of jobs, while the test breaks Redis underneath. It records every job
 * start (processedOn as the processor saw it), every processor that returned, the `completed`/`failed` events, the
 * `error` events, and process-level unhandledRejection/uncaughtException (recorded instead of crashing, so that the
 * test can count them). Commands arrive on stdin, one per line: `stop-adding`, then `finish` (waits until every job
 * added is completed or failed, or `settleMs` passed, reads each job's final state and prints `@@RESULT <json>`).
 */
import { createInterface } from 'node:readline';
import { Job, Queue, Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import pino from 'pino';
import { Throttle, ThrottledWorker } from '../../src';
import { reviveEndedConnection } from '../../src/redis/reviveEndedConnection';
import type { FailoverLoadConfig, LoadQueueResult, LoadResult, LoadQueueSpec } from './failoverLoad';

const config = JSON.parse(process.env.FAILOVER_LOAD ?? '{}') as FailoverLoadConfig;
const unhandled: string[] = [];
const uncaught: string[] = [];
process.on('unhandledRejection', (reason) => { unhandled.push(describe(reason)); });
process.on('uncaughtException', (error) => { uncaught.push(describe(error)); });

const debug = (message: string) => { if (process.env.FAILOVER_LOAD_DEBUG) process.stderr.write(`${new Date().toISOString()} ${message}\n`); };

function describe(thing: unknown): string {
  return thing instanceof Error ? `${thing.message}\n${thing.stack ?? ''}`.slice(0, 2_000) : String(thing);
}

/** What docs/redis.md asks of an ioredis Sentinel client (see "Failover"). */
const SENTINEL_FAILOVER_SETTINGS = {
  failoverDetector: true,
  reconnectOnError: (error: Error) => (error.message.startsWith('READONLY') ? 2 : false),
} as const;

const clients: (Redis | Cluster)[] = [];
function connect(): Redis | Cluster {
  const c = config.connection;
  const client = c.kind === 'cluster'
    ? new Cluster(c.seeds, { ...(c.clusterOptions ?? {}), redisOptions: { maxRetriesPerRequest: null } })
    : new Redis({ sentinels: c.sentinels, name: c.name, maxRetriesPerRequest: null, ...(c.failoverSettings ? SENTINEL_FAILOVER_SETTINGS : {}), ...(c.redisOptions ?? {}) });
  client.on('error', () => undefined);
  // What docs/redis.md asks of the app's other clients on the failover settings (queues, plain workers): ioredis can
  // end a Sentinel client for good mid-reconnect (redis/ioredis#1683). A CI rehearsal saw both queues' clients end
  // so after a kill -9, every job state read then failing with "Connection is closed.".
  if (c.kind !== 'cluster' && c.failoverSettings) reviveEndedConnection(client, pino({ level: 'warn' }, pino.destination(2)), 'load', () => !clientsClosing);
  clients.push(client);
  return client;
}
let clientsClosing = false;

interface Running {
  spec: LoadQueueSpec;
  queue: Queue;
  worker: Worker;
  result: LoadQueueResult;
  added: Set<string>;
}

function startQueue(spec: LoadQueueSpec): Running {
  const result: LoadQueueResult = {
    label: spec.label, added: 0, starts: [], returned: [], completed: [], failed: [], errors: [], errorCount: 0, states: {}, addFailures: 0,
  };
  const processor = async (job: Job) => {
    result.starts.push({ id: job.id!, processedOn: job.processedOn!, startedAt: performance.timeOrigin + performance.now(), attempt: job.attemptsStarted });
    await new Promise((resolve) => setTimeout(resolve, config.processMs));
    result.returned.push(job.id!);
    return 'ok';
  };
  const options = {
    connection: connect() as never, prefix: spec.prefix, concurrency: spec.concurrency,
    lockDuration: config.lockDurationMs, stalledInterval: config.stalledIntervalMs,
  };
  const worker = spec.kind === 'plain'
    ? new Worker(spec.name, processor, options)
    : new ThrottledWorker(spec.name, processor, {
      ...options,
      throttlePrefix: spec.throttlePrefix,
      // Its warnings always (a few lines, kept in the load's log file for a failure to be read after); everything with FAILOVER_LOAD_DEBUG.
      logger: pino({ level: process.env.FAILOVER_LOAD_DEBUG ? 'debug' : 'info', base: { q: spec.label } }, pino.destination(2)),
      leaseMs: spec.leaseMs,
      throttles: [Throttle.named(spec.throttle?.name ?? 'api').limit(spec.throttle?.max ?? 10_000, spec.throttle?.windowMs ?? 1_000)],
    });
  worker.on('completed', (job) => { result.completed.push(job.id!); });
  worker.on('failed', (job, error) => { if (job) result.failed.push({ id: job.id!, reason: error.message }); });
  worker.on('error', (error) => {
    debug(`${spec.label} error: ${error.message}`);
    result.errorCount++;
    if (result.errors.length < 20 && !result.errors.includes(error.message)) result.errors.push(error.message);
  });
  const queue = new Queue(spec.name, { connection: connect() as never, prefix: spec.prefix });
  queue.on('error', () => undefined);
  return { spec, queue, worker, result, added: new Set() };
}

const running = config.queues.map(startQueue);
let adding = true;

/** Adds job n of every queue each tick; an add that fails is retried under the same job id (an add is idempotent then). */
async function produce(): Promise<void> {
  const intervalMs = 1_000 / config.ratePerSec;
  const startedAt = Date.now();
  for (let n = 0; adding; n++) {
    const id = `j${n}`;
    for (const r of running) void addWithRetry(r, id);
    const next = startedAt + (n + 1) * intervalMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
  }
}

async function addWithRetry(r: Running, id: string): Promise<void> {
  r.added.add(id);
  r.result.added = r.added.size;
  for (;;) {
    try {
      await r.queue.add('load', { id }, { jobId: id });
      return;
    } catch {
      r.result.addFailures++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function finish(): Promise<void> {
  adding = false;
  const deadline = Date.now() + config.settleMs;
  const finished = (r: Running) => new Set([...r.result.completed, ...r.result.failed.map((f) => f.id)]).size >= r.added.size;
  debug('finish: waiting for the jobs added');
  while (Date.now() < deadline && !running.every(finished)) await new Promise((resolve) => setTimeout(resolve, 100));
  debug(`finish: ${running.map((r) => `${r.spec.label} ${r.result.completed.length}/${r.added.size}`).join(', ')}; reading states`);
  // A worker's 'completed' event is not Redis's word: a completion written to a master whose writes were then lost
  // (the old master after a failover) leaves the job active in Redis, locked until its lock lapses, and bullmq's
  // stalled-job check then moves it back to wait and it runs again. So the states are read until every job Redis
  // keeps has ended (or settleMs passed), rereading only the ones that had not.
  let unsettled = running.map((r) => ({ r, ids: [...r.added] }));
  for (;;) {
    for (const { r, ids } of unsettled) await readStates(r, ids);
    unsettled = unsettled
      .map(({ r, ids }) => ({ r, ids: ids.filter((id) => !SETTLED.has(r.result.states[id])) }))
      .filter(({ ids }) => ids.length > 0);
    if (unsettled.length === 0 || Date.now() >= deadline) break;
    debug(`finish: not ended in Redis yet: ${unsettled.map(({ r, ids }) => `${r.spec.label} ${ids.slice(0, 5).join(' ')}`).join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  debug('finish: closing the workers');
  const closeHung: string[] = [];
  await Promise.all(running.map(async (r) => {
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      r.worker.close().then(() => true, () => true),
      new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), config.closeTimeoutMs ?? 20_000); }),
    ]);
    clearTimeout(timer);
    if (!closed) closeHung.push(r.spec.label);
  }));
  debug(`finish: closed (hung: ${closeHung.join(', ') || 'none'})`);
  await Promise.all(running.map((r) => r.queue.close().catch(() => undefined)));
  const result: LoadResult = { queues: running.map((r) => r.result), closeHung, unhandled, uncaught };
  process.stdout.write(`@@RESULT ${JSON.stringify(result)}\n`);
  clientsClosing = true;
  for (const client of clients) client.disconnect();
  process.exit(0);
}

/** The states a job ends in: 'unknown' is a job Redis lost (its add went to a master whose writes were dropped). */
const SETTLED = new Set(['completed', 'failed', 'unknown']);

async function readStates(r: Running, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 100) {
    const states = await Promise.all(ids.slice(i, i + 100).map((id) => r.queue.getJobState(id).catch((error: Error) => `error: ${error.message}`)));
    states.forEach((state, j) => { r.result.states[ids[i + j]] = state; });
  }
}

async function main(): Promise<void> {
  await Promise.all(running.map((r) => r.worker.waitUntilReady()));
  void produce();
  process.stdout.write('@@READY\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'stop-adding') adding = false;
    if (line === 'finish') await finish();
  }
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
