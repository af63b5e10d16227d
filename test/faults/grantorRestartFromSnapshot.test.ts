import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import IORedis from 'ioredis';
import { mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { waitFor } from '../support/bullmq';
import { uniquePrefix } from '../support/redis';
import { nowMs } from '../support/processorStart';

/**
 * A grantor on a Redis of its own restarted from an older state: its counts lack the burst the queues
 * delivered just before, but the queues (on another Redis) recorded it. The new grantor grants nothing
 * until they have told it, and counts the burst again: no window of W holds more than N, without a
 * pause of a whole window.
 */
describe('a grantor restarted from an older snapshot', () => {
  let dir: string;
  let grantorServer: LocalRedisServer | undefined;
  let queueServer: LocalRedisServer | undefined;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'bullmq-throttle-grantor-')); });
  afterEach(async () => {
    await grantorServer?.stop();
    await queueServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rebuilds its counts from the queues\' records: never more than N in any W, each job once', async () => {
    grantorServer = await startLocalRedisServer({ dir });
    queueServer = await startLocalRedisServer();
    const grantorPort = grantorServer.port;
    const grantorConnection = { host: '127.0.0.1', port: grantorPort, maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const connection = { host: '127.0.0.1', port: queueServer.port, maxRetriesPerRequest: null };
    const prefix = uniquePrefix('gsnap');
    const keys = new ThrottleKeys(prefix);
    const N = 20;
    const W = 8_000;
    const starts: { at: number; started: number; id: string }[] = [];
    const queue = new Queue('calls', { connection, prefix });
    const worker = new ThrottledWorker('calls', async (job: Job) => { starts.push({ at: job.processedOn!, started: nowMs(), id: job.id! }); }, {
      connection, prefix, concurrency: 5, throttles: [Throttle.named('api').limit(N, `${W}ms`)], grantor: { connection: grantorConnection },
    });
    worker.on('error', () => undefined);
    try {
      await worker.waitUntilReady();
      const grantor = new IORedis(grantorConnection);
      // The first lease records the grantor's identity; the snapshot holds it, the registry and no grant.
      await queue.add('warm', {});
      await waitFor(() => starts.length === 1, 10_000, 'a first delivery');
      await grantor.save();
      await queue.addBulk(Array.from({ length: N - 1 }, (_, i) => ({ name: 'burst', data: { i } })));
      await waitFor(() => starts.length === N, 10_000, 'the burst');
      process.kill(grantorServer.pid, 'SIGKILL');
      grantor.disconnect();
      await new Promise((r) => setTimeout(r, 200));
      grantorServer = await startLocalRedisServer({ port: grantorPort, dir });
      // Restored: the grantor's counts hold one delivery of the twenty. More jobs wait for room, which returns
      // once the burst has left the window (the rebuilt counts), a while after the grantor's own hold ends.
      const restartedAt = Date.now();
      await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'more', data: { i } })));
      await waitFor(() => starts.length === 2 * N, 30_000, 'the rest, delivered by itself once room returns');
      const firstAfter = starts[N].at;
      process.stderr.write(`grantor restart: burst ${starts[N - 1].at - starts[0].at} ms; next delivery ${firstAfter - restartedAt} ms after the restart, ${firstAfter - starts[N - 1].at} ms after the burst\n`);
      expect(new Set(starts.map((s) => s.id)).size).toBe(2 * N);
      expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
      expect(mostInAnyWindow(starts.map((s) => s.started), W)).toBeLessThanOrEqual(N);
      const restored = new IORedis(grantorConnection);
      try {
        expect(await restored.smembers(`${keys.grantorRecord}:reported`)).toEqual([`${prefix}:calls`]);
        expect(Number(await restored.hget(keys.grantorRecord, 'epoch'))).toBe(1);
      } finally {
        restored.disconnect();
      }
      const admin = new ThrottleAdmin({ connection: grantorConnection, prefix });
      try {
        expect((await admin.throttleBucket('api', null)).limits[0].counted).toBeGreaterThanOrEqual(N);
        expect((await admin.throttleStats('api')).recoveryHold).toBeNull();
      } finally {
        await admin.close();
      }
    } finally {
      await worker.close();
      await queue.close();
    }
  }, 90_000);
});
