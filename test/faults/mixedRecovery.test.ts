import { Job, Queue } from 'bullmq';
import IORedis, { Redis } from 'ioredis';
import { mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { capturingLogger, connectionFor, waitFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { SnapshotRedis } from '../support/snapshotRedis';
import { nowMs } from '../support/processorStart';

/**
 * Issue 26, item 2, a namespace with both delivery modes: queue qa's keys live on the namespace's node (exact
 * delivery), queue qb's on another Redis (leased delivery, the `grantor` option). The namespace's node restarts
 * from a snapshot saved before qb started: its registry lacks qb, and its counts lack what both delivered. qa's
 * worker remembers its deliveries and saw qb alive; qb keeps what it spent in its own records. The throttle goes
 * on once both told, not after its hour, and the hour never holds more than N, from processor starts and from
 * processedOn.
 */
const N = 10;
const HOUR = 3_600_000;

describe('a namespace of exact and leased queues, its node restarted from an older snapshot', () => {
  let node: SnapshotRedis;
  let redis: Redis;
  let prefix: string;
  const closers: (() => Promise<unknown>)[] = [];
  beforeEach(() => {
    node = new SnapshotRedis();
    redis = newRedis();
    prefix = uniquePrefix('mrec');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
    await node.stop();
  });

  // qb asking for tokens after the restart reports as it asks; an idle qb reports on its heartbeat (every 2 s here),
  // after qa's (every 500 ms), so only what qa remembers of qb keeps the gather waiting for it.
  for (const qbAsks of [true, false]) it(`waits for the exact worker and the leased queue ${qbAsks ? 'asking for tokens' : 'with nothing to lease'} to tell, then goes on with their deliveries counted`, async () => {
    const nodeConnection = { host: '127.0.0.1', port: await node.start(), maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const starts: { processedOn: number; at: number; queue: string }[] = [];
    const logs = capturingLogger();
    const api = () => Throttle.named('api').limit(N, '1h');
    const options = { prefix, concurrency: 4, declarationTtlMs: 1_500, logger: logs.logger, throttles: [api()] };
    const processor = (queue: string) => async (job: Job) => { starts.push({ processedOn: job.processedOn!, at: nowMs(), queue }); };
    const track = <T extends { close: () => Promise<unknown>; on: (e: 'error', f: () => void) => unknown }>(closable: T): T => {
      closable.on('error', () => undefined);
      closers.push(() => closable.close());
      return closable;
    };
    const keys = new ThrottleKeys(prefix);
    const admin = new IORedis(nodeConnection);
    closers.push(async () => admin.disconnect());

    // qa: exact (its keys on the namespace's node). The snapshot knows qa only.
    const a = track(new ThrottledWorker('qa', processor('qa'), { ...options, connection: nodeConnection }));
    await a.waitUntilReady();
    await waitFor(async () => (await admin.zcard(keys.registryAlive)) === 1, 10_000, 'qa registered');
    await waitFor(async () => (await admin.exists(keys.grantorRecord)) === 1, 10_000, 'the node identity recorded');
    await admin.save();

    // qb: leased (its keys on the shared Redis, the throttles on the namespace's node).
    const b = track(new ThrottledWorker('qb', processor('qb'), {
      ...options, declarationTtlMs: qbAsks ? 1_500 : 6_000, connection: connectionFor(), grantor: { connection: nodeConnection },
    }));
    await b.waitUntilReady();
    const qa = () => track(new Queue('qa', { connection: nodeConnection, prefix }));
    const qb = track(new Queue('qb', { connection: connectionFor(), prefix }));
    await qa().addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'call', data: { i } })));
    await qb.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'call', data: { i } })));
    await waitFor(() => starts.length === 6, 10_000, 'the first 6');
    // qa's heartbeat (every 500 ms) has seen qb alive in the registry.
    await new Promise((r) => setTimeout(r, 1_200));

    await node.restartFromSnapshot();
    const restartedAt = nowMs();
    // The restored node counts nothing and knows qa only: without both reports, 10 more would fit.
    await qa().addBulk(Array.from({ length: 7 }, (_, i) => ({ name: 'call', data: { i } })));
    if (qbAsks) await qb.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'call', data: { i } })));
    await waitFor(() => starts.length === N, 15_000, `${N} in the hour`).catch(async (error: unknown) => {
      const seen = {
        starts: starts.map((s) => s.queue), logs: logs.lines.filter((l) => l.level >= 40).map((l) => l.msg),
        record: await admin.hgetall(keys.grantorRecord), holds: await admin.hgetall(keys.grantorHolds),
        reported: await admin.smembers(`${keys.grantorRecord}:reported`), expected: await admin.hgetall(`${keys.grantorRecord}:expected`),
        counter: await admin.hgetall(keys.windowCounter('api', '-', HOUR)),
      };
      process.stderr.write(`mixed recovery, stalled: ${JSON.stringify(seen)}\n`);
      throw error;
    });
    process.stderr.write(`mixed recovery (qb ${qbAsks ? 'asking' : 'idle'}): first start ${starts[6].at - restartedAt} ms after the restart\n`);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(starts).toHaveLength(N);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), HOUR)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.at), HOUR)).toBeLessThanOrEqual(N);
    // Both told: nobody was given up on, so no throttle is held for its window.
    expect(await admin.hget(keys.grantorRecord, 'hold')).toBe('gather');
    expect(await admin.hget(keys.grantorRecord, 'gathering')).toBe('');
    expect(await admin.hlen(keys.grantorHolds)).toBe(0);
    expect(await admin.sismember(`${keys.grantorRecord}:reported`, `${prefix}:qb`)).toBe(1);
    const workerId = (a as unknown as { gate: { workerId: string } }).gate.workerId;
    expect(await admin.sismember(`${keys.grantorRecord}:reported`, workerId)).toBe(1);
    const throttleAdmin = new ThrottleAdmin({ connection: nodeConnection, prefix });
    closers.push(() => throttleAdmin.close());
    expect((await throttleAdmin.throttleStats('api')).recoveryHold).toBeNull();
  }, 60_000);
});
