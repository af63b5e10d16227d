import { Job, Queue } from 'bullmq';
import IORedis from 'ioredis';
import { mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { waitFor } from '../support/bullmq';
import { SnapshotRedis } from '../support/snapshotRedis';
import { nowMs } from '../support/processorStart';

/**
 * A single Redis restarted from an older state (a snapshot saved before a burst, then kill -9, then the
 * snapshot loaded again): the counts go back in time, but the deliveries they forgot happened. The
 * throttles hold for their longest window after the restart, so that no window of W holds more than N
 * of the deliveries the processors received, the forgotten ones included.
 */

/** The namespace node identity the worker last saw recorded ('' for none): what its calls send. */
function knownNodeId(worker: ThrottledWorker): string {
  return (worker as unknown as { gate: { recovery: { knownNodeId: string } } }).gate.recovery.knownNodeId;
}

describe('a Redis restarted from an older snapshot', () => {
  let redis: SnapshotRedis;
  beforeEach(() => { redis = new SnapshotRedis(); });
  afterEach(() => redis.stop());

  for (const durableRedis of [false, true]) {
    // leaseMs 0: the worker has no start deadline, so it remembers nothing of what it delivered (src/worker/
    // deliveryMemory.ts): nobody can tell the restarted node (test/faults/recoveryFromWorkers.test.ts has them tell).
    it(durableRedis ? 'with durableRedis, resumes after the lease margin (and may then exceed: the option trusts Redis)' : 'when no worker can tell what it delivered, holds the throttle for its longest window: never more than N in any W', async () => {
      const port = await redis.start();
      const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 };
      const N = 20;
      const W = 3_000;
      const starts: number[] = [];
      const processorStarts: number[] = [];
      const queue = new Queue('burst', { connection });
      const worker = new ThrottledWorker('burst', async (job: Job) => { starts.push(job.processedOn!); processorStarts.push(nowMs()); }, {
        connection, concurrency: 10, durableRedis, leaseMs: 0, throttles: [Throttle.named('api').limit(N, `${W}ms`)],
      });
      worker.on('error', () => undefined);
      queue.on('error', () => undefined);
      try {
        await worker.waitUntilReady();
        // The snapshot holds the registered worker, the node's identity and no delivery yet.
        const admin = new IORedis(connection);
        await waitFor(async () => (await admin.exists(new ThrottleKeys('bull').grantorRecord)) === 1, 10_000, 'the node identity recorded');
        await admin.save();
        admin.disconnect();
        await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'a', data: { i } })));
        await waitFor(() => starts.length === N, 10_000, 'the first burst');
        await redis.restartFromSnapshot();
        // The restored state has neither the burst's jobs nor its counts: the next burst finds room at once.
        await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'b', data: { i } })));
        if (!durableRedis) {
          // While held, the stats say so and until when.
          const adminApi = new ThrottleAdmin({ connection });
          try {
            // A workers' gather (until every expected worker told, or the gather's time is up: the worker here
            // cannot tell), then the throttle's longest window from the restart, whichever ends later.
            await waitFor(async () => (await adminApi.throttleStats('api')).recoveryHold !== null, 5_000, 'the hold to show in the stats');
            const { recoveryHold, at } = await adminApi.throttleStats('api');
            expect(['gather', 'window']).toContain(recoveryHold!.kind);
            expect(recoveryHold!.until - at).toBeGreaterThan(W / 2);
          } finally {
            await adminApi.close();
          }
        }
        await waitFor(() => starts.length === 2 * N, 20_000, 'the second burst');
        const most = mostInAnyWindow(starts, W);
        process.stderr.write(`durableRedis ${durableRedis}: most in any ${W} ms: ${most} of ${2 * N}; second burst began ${starts[N] - starts[N - 1]} ms after the first ended\n`);
        if (durableRedis) {
          // The option says Redis loses nothing; here it did, so the limit is exceeded: what the docs warn of.
          expect(most).toBeGreaterThan(N);
        } else {
          expect(most).toBeLessThanOrEqual(N);
          expect(mostInAnyWindow(processorStarts, W)).toBeLessThanOrEqual(N);
        }
      } finally {
        await worker.close();
        await queue.close();
      }
    }, 60_000);
  }
  it('saved before the namespace\'s first delivery: the workers remember its node, so the throttle holds rather than counting from nothing', async () => {
    const port = await redis.start();
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const N = 20;
    const W = 3_000;
    // The snapshot holds nothing of the namespace: no identity, no registry, no count.
    const admin = new IORedis(connection);
    await admin.save();
    const starts: number[] = [];
    const processorStarts: number[] = [];
    const queue = new Queue('early', { connection });
    const worker = new ThrottledWorker('early', async (job: Job) => { starts.push(job.processedOn!); processorStarts.push(nowMs()); }, {
      connection, concurrency: 10, declarationTtlMs: 1_500, throttles: [Throttle.named('api').limit(N, `${W}ms`)],
    });
    worker.on('error', () => undefined);
    queue.on('error', () => undefined);
    try {
      await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'a', data: { i } })));
      await waitFor(() => starts.length === N, 10_000, 'the first burst');
      // The worker reads the identity the first delivery recorded (right after it, or on a heartbeat).
      await waitFor(() => knownNodeId(worker) !== '', 5_000, 'the worker to know the namespace\'s node');
      await redis.restartFromSnapshot();
      await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'b', data: { i } })));
      await waitFor(() => starts.length === 2 * N, 20_000, 'the second burst').catch(async (error: unknown) => {
        // Seen twice under the full suite's load, never alone: what the namespace's record and holds said then.
        const keys = new ThrottleKeys('bull');
        const seen = {
          starts: starts.length, counts: await queue.getJobCounts(), knownNodeId: knownNodeId(worker), startDeadline: worker.startDeadline,
          record: await admin.hgetall(keys.grantorRecord), holds: await admin.hgetall(keys.grantorHolds),
          redisTime: await admin.time(),
          wakeups: await admin.zrange(keys.queue('early').wakeups, '0', '-1', 'WITHSCORES'),
          queueKeys: await Promise.all((await admin.keys('*early*')).filter((k) => !/^bull:early:\d+$/.test(k)).map(async (k) => `${k} ${await admin.type(k)}`)),
          job1: await admin.hgetall('bull:early:1'),
          marker: await admin.zrange('bull:early:marker', '0', '-1', 'WITHSCORES'),
        };
        process.stderr.write(`snapshot before the first delivery, stalled: ${JSON.stringify(seen)}\n`);
        throw error;
      });
      process.stderr.write(`snapshot before the first delivery: second burst began ${starts[N] - starts[N - 1]} ms after the first ended\n`);
      expect(mostInAnyWindow(starts, W)).toBeLessThanOrEqual(N);
      expect(mostInAnyWindow(processorStarts, W)).toBeLessThanOrEqual(N);
    } finally {
      admin.disconnect();
      await worker.close();
      await queue.close();
    }
  }, 60_000);

  it('saved before a burst counted with the longer lease (a bucket far from full): the workers\' recount holds it as long', async () => {
    const port = await redis.start();
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const N = 20;
    const W = 5_000;
    const admin = new IORedis(connection);
    await admin.save();
    const starts: number[] = [];
    const processorStarts: number[] = [];
    const queue = new Queue('lease', { connection });
    // The first 5 (a quarter of N) are counted with a lease of 250 ms; the first processor holds the loop 200 ms,
    // so the other 4 start up to that late, within their lease. The restored node has no record of that lease:
    // recounted with h (20 ms), the next 20 could start 230 ms too early, 24 in one window of processor starts.
    let held = false;
    const worker = new ThrottledWorker('lease', async (job: Job) => {
      starts.push(job.processedOn!);
      processorStarts.push(nowMs());
      if (!held) {
        held = true;
        const until = performance.now() + 200;
        while (performance.now() < until) { /* busy */ }
      }
    }, { connection, concurrency: 5, leaseMs: 20, declarationTtlMs: 1_500, throttles: [Throttle.named('api').limit(N, `${W}ms`)] });
    worker.on('error', () => undefined);
    queue.on('error', () => undefined);
    try {
      await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'a', data: { i } })));
      await waitFor(() => starts.length === 5, 10_000, 'the first 5');
      // 250, or more when the first processor's 200 ms came past its lease on a loaded machine: then its tokens
      // counted longer, and the record's hmax took that lease (lua/countLateStart-n.lua).
      expect(Number(await admin.hget(new ThrottleKeys('bull').grantorRecord, 'hmax'))).toBeGreaterThanOrEqual(250);
      await waitFor(() => knownNodeId(worker) !== '', 5_000, 'the worker to know the namespace\'s node');
      await redis.restartFromSnapshot();
      await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'b', data: { i } })));
      await waitFor(() => starts.length === 5 + N, 20_000, 'the next 20');
      expect(mostInAnyWindow(starts, W)).toBeLessThanOrEqual(N);
      expect(mostInAnyWindow(processorStarts, W)).toBeLessThanOrEqual(N);
    } finally {
      admin.disconnect();
      await worker.close();
      await queue.close();
    }
  }, 60_000);

  it('a worker knows the namespace\'s node right after its first deliveries, not at its first heartbeat', async () => {
    const port = await redis.start();
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
    const queue = new Queue('learn', { connection });
    // The default declarationTtlMs (15 s): the first heartbeat comes 5 s after the start.
    const worker = new ThrottledWorker('learn', async () => undefined, { connection, throttles: [Throttle.named('api').limit(5, '1s')] });
    worker.on('error', () => undefined);
    try {
      await worker.waitUntilReady();
      await queue.add('a', {});
      await waitFor(() => knownNodeId(worker) !== '', 2_000, 'the worker to know the namespace\'s node');
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
