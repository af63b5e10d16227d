import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import IORedis, { Redis } from 'ioredis';
import { assertSupportedBullmq, SUPPORTED_BULLMQ_RANGE, Throttle, ThrottledWorker, ThrottleKeys, UnsupportedBullmqError } from '../../src';
import { freeLoopbackPort, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { newRedis } from '../support/redis';
import { capturingLogger, connectionFor, waitFor, WorkerTestBed } from '../support/bullmq';

describe('resilience', () => {
  it('rejects an unsupported bullmq version with the supported range', () => {
    expect(() => assertSupportedBullmq('5.9.0')).toThrow(UnsupportedBullmqError);
    expect(() => assertSupportedBullmq('7.0.0')).toThrow(`bullmq-throttle supports bullmq ${SUPPORTED_BULLMQ_RANGE}, but bullmq 7.0.0 is installed`);
    expect(() => assertSupportedBullmq('6.7.0')).not.toThrow();
    expect(() => assertSupportedBullmq()).not.toThrow();
  });

  it('starts once Redis comes up, then delivers', async () => {
    const port = await freeLoopbackPort();
    const { logger, lines } = capturingLogger();
    const connection = { ...connectionFor(`redis://127.0.0.1:${port}`), retryStrategy: () => 100 };
    const processed: string[] = [];
    const worker = new ThrottledWorker('late-redis', async (job) => { processed.push(job.id!); }, {
      connection, prefix: 'resilience', logger, throttles: [Throttle.named('api').limit(10, '1s')],
    });
    worker.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 600));
    const server = await startLocalRedisServer({ port });
    try {
      const queue = new Queue('late-redis', { connection, prefix: 'resilience' });
      await queue.addBulk([1, 2, 3].map((i) => ({ name: 'n', data: { i } })));
      await waitFor(() => processed.length === 3, 20_000, 'deliveries once Redis is up');
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      await worker.close();
      await queue.close();
    } finally {
      await server.stop();
    }
  });

  it('survives a Redis restart mid-run without losing or duplicating jobs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'restart-'));
    const durable = ['--appendonly', 'yes', '--appendfsync', 'always'];
    const server = await startLocalRedisServer({ dir, args: durable });
    let restarted: Awaited<ReturnType<typeof startLocalRedisServer>> | undefined;
    const connection = { ...connectionFor(server.url), retryStrategy: () => 100 };
    const processed: string[] = [];
    const { logger, lines } = capturingLogger();
    // A job whose completion the restart cut off stays active under this worker's lock until bullmq's stalled check
    // puts it back once the lock lapses, as with a plain Worker: 30 s by default, the whole wait below (one job left
    // active in a loaded rehearsal). A shorter lock lets that check do its work within the wait.
    const worker = new ThrottledWorker('restart', async (job) => { processed.push(job.id!); }, {
      connection, prefix: 'resilience', concurrency: 2, throttles: [Throttle.named('api').limit(5, 500)], logger,
      lockDuration: 4_000, stalledInterval: 1_000,
    });
    worker.on('error', () => undefined);
    const queue = new Queue('restart', { connection, prefix: 'resilience' });
    queue.on('error', () => undefined);
    try {
      await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'n', data: { i } })));
      await waitFor(() => processed.length >= 5, 10_000, 'the first deliveries');
      await server.stop();
      await new Promise((r) => setTimeout(r, 500));
      restarted = await startLocalRedisServer({ port: server.port, dir, args: durable });
      await waitFor(() => new Set(processed).size === 30, 30_000, 'every job after the restart').catch(async (error: unknown) => {
        // Seen once, in a CI rehearsal's bullmq 5.81.5 line on a loaded machine (4.2-4.7 s here, alone or beside
        // three busy loops): what the namespace and the queue said then.
        const peek = new IORedis(restarted!.url);
        const keys = new ThrottleKeys('resilience');
        const q = keys.queue('restart');
        const seen = {
          processed: new Set(processed).size, counts: await queue.getJobCounts(), startDeadline: worker.startDeadline,
          record: await peek.hgetall(keys.grantorRecord), holds: await peek.hgetall(keys.grantorHolds),
          state: await peek.hgetall(q.state), stale: await peek.smembers(q.stale), ready: await peek.zrange(q.readyClasses, '0', '-1', 'WITHSCORES'),
          wakeups: await peek.zrange(q.wakeups, '0', '-1', 'WITHSCORES'), redisTime: await peek.time(),
          logs: lines.filter((l) => l.level >= 30).map((l) => l.msg).slice(-30),
        };
        peek.disconnect();
        process.stderr.write(`restart mid-run, stalled: ${JSON.stringify(seen)}\n`);
        throw error;
      });
      await new Promise((r) => setTimeout(r, 300));
      // At-least-once as bullmq: a job in flight at the crash may run again; none is lost.
      expect(new Set(processed).size).toBe(30);
      expect(processed.length).toBeLessThanOrEqual(30 + 2);
      expect(lines.some((l) => l.msg === 'throttle declarations registered')).toBe(true);
      expect(lines.some((l) => /lost the Redis connection/.test(l.msg))).toBe(true);
      expect(lines.some((l) => l.msg === 'reconnected to Redis')).toBe(true);
    } finally {
      await worker.close().catch(() => undefined);
      await queue.close().catch(() => undefined);
      await restarted?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('plain workers and closing', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('plain');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('warns, naming the queue, when a plain bullmq Worker consumes a throttled queue', async () => {
    const { logger, lines } = capturingLogger();
    const throttled = bed.worker('watched', null, { throttles: [Throttle.named('api').limit(1, '1s')], logger, declarationTtlMs: 600 });
    await throttled.waitUntilReady();
    const plain = new Worker('watched', async () => undefined, { connection: bed.connection, prefix: bed.prefix });
    bed.onClose(() => plain.close());
    await plain.waitUntilReady();
    await waitFor(() => lines.some((l) => /not ThrottledWorkers/.test(l.msg)), 5_000, 'the warning');
    const warning = lines.find((l) => /not ThrottledWorkers/.test(l.msg))!;
    expect(warning.msg).toContain("queue 'watched'");
    expect(warning.queue).toBe('watched');
  });

  it('close() lets the active job finish, then withdraws the declarations', async () => {
    const queue = bed.queue('closing');
    let finished = false;
    const worker = bed.worker('closing', async () => { await new Promise((r) => setTimeout(r, 300)); finished = true; }, {
      throttles: [Throttle.named('closing-api').limit(5, '1s')],
    });
    await queue.add('slow', {});
    await waitFor(async () => (await queue.getActiveCount()) === 1, 5_000, 'the job to start');
    await worker.close();
    expect(finished).toBe(true);
    expect(await queue.getJobCounts('completed')).toEqual({ completed: 1 });
    const entries = await redis.hlen(new ThrottleKeys(bed.prefix).registryDeclarations);
    expect(entries).toBe(0);
  });
});

void IORedis;
