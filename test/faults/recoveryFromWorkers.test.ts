import { Job, Queue } from 'bullmq';
import IORedis from 'ioredis';
import { mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys, ThrottleRecoveryEvent, UnknownThrottleError } from '../../src';
import { waitFor } from '../support/bullmq';
import { crash } from '../support/crashWorker';
import { SnapshotRedis } from '../support/snapshotRedis';
import { nowMs } from '../support/processorStart';

/**
 * Issue 26, item 2: recovery in seconds, from what live workers remember. A Redis restarted from a snapshot
 * saved before a burst forgets the burst's counts; the workers that delivered it remember (their start
 * deadline's tickets), tell the namespace, and a throttle of 20 per hour goes on within seconds with the
 * burst counted again, instead of holding for the hour. A worker that delivered and died before the restart
 * cannot tell: the throttles it declared hold for their longest window.
 */
const N = 20;
const HOUR = 3_600_000;

describe('recovery from what live workers remember', () => {
  let redis: SnapshotRedis;
  beforeEach(() => { redis = new SnapshotRedis(); });
  afterEach(() => redis.stop());

  async function setUp() {
    const connection = { host: '127.0.0.1', port: await redis.start(), maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const starts: { processedOn: number; at: number; worker: string }[] = [];
    const queue = new Queue('hourly', { connection });
    queue.on('error', () => undefined);
    const worker = (name: string) => {
      const w = new ThrottledWorker('hourly', async (job: Job) => { starts.push({ processedOn: job.processedOn!, at: nowMs(), worker: name }); }, {
        connection, concurrency: 4, declarationTtlMs: 1_500, throttles: [Throttle.named('api').limit(N, '1h')],
      });
      w.on('error', () => undefined);
      return w;
    };
    return { connection, starts, queue, worker };
  }

  async function saveSnapshot(connection: object): Promise<void> {
    const admin = new IORedis(connection);
    await waitFor(async () => (await admin.exists(new ThrottleKeys('bull').grantorRecord)) === 1, 10_000, 'the node identity recorded');
    await admin.save();
    admin.disconnect();
  }

  it('a live worker tells what it delivered: the throttle goes on within seconds, the forgotten burst counted', async () => {
    const { connection, starts, queue, worker } = await setUp();
    const a = worker('a');
    const admin = new ThrottleAdmin({ connection });
    try {
      await a.waitUntilReady();
      await saveSnapshot(connection);
      await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'first', data: { i } })));
      await waitFor(() => starts.length === 12, 10_000, 'the first burst');
      await redis.restartFromSnapshot();
      // The restored state has neither the burst's jobs nor its counts; 8 of the hour's 20 are left.
      await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'second', data: { i } })));
      const restartedAt = nowMs();
      await waitFor(() => starts.length === 20, 15_000, '8 more within seconds');
      process.stderr.write(`recovery from memory: 8 more started ${Math.round(starts[19].at - restartedAt)} ms after the restart\n`);
      await waitFor(async () => (await admin.queueStats('hourly')).heldByFullBuckets === 4, 5_000, 'the other 4 held on the full bucket').catch(async (error: unknown) => {
        // Seen under load (three busy loops beside the fault tests): what the queue's state said then.
        const keys = new ThrottleKeys('bull').queue('hourly');
        const peek = new IORedis(connection);
        const seen = {
          starts: starts.length, stats: await admin.queueStats('hourly'), putBack: a.startDeadline,
          state: await peek.hgetall(keys.state), classes: await peek.smembers(keys.classes), stale: await peek.smembers(keys.stale),
          ready: await peek.zrange(keys.readyClasses, '0', '-1', 'WITHSCORES'), wakeups: await peek.zrange(keys.wakeups, '0', '-1', 'WITHSCORES'),
          classState: await peek.hgetall(keys.classState), counts: await queue.getJobCounts(),
        };
        peek.disconnect();
        process.stderr.write(`recovery from memory, the 4 not seen held: ${JSON.stringify(seen)}\n`);
        throw error;
      });
      expect((await admin.throttleStats('api')).recoveryHold).toBeNull();
      expect(starts).toHaveLength(20);
      expect(mostInAnyWindow(starts.map((s) => s.processedOn), HOUR)).toBeLessThanOrEqual(N);
      expect(mostInAnyWindow(starts.map((s) => s.at), HOUR)).toBeLessThanOrEqual(N);
    } finally {
      await admin.close();
      await a.close();
      await queue.close();
    }
  }, 60_000);

  it('a worker that delivered and died cannot tell: the throttles it declared hold for their longest window', async () => {
    const { connection, starts, queue, worker } = await setUp();
    const a = worker('a');
    const b = worker('b');
    const admin = new ThrottleAdmin({ connection });
    try {
      await Promise.all([a.waitUntilReady(), b.waitUntilReady()]);
      await saveSnapshot(connection);
      await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'first', data: { i } })));
      await waitFor(() => starts.length === 12, 10_000, 'the first burst');
      // Both have seen each other in the registry by now (a heartbeat every 500 ms).
      await new Promise((r) => setTimeout(r, 1_200));
      await crash(b);
      const holds: ThrottleRecoveryEvent[] = [];
      a.on('throttle:recovery', (event) => holds.push(event));
      await redis.restartFromSnapshot();
      await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'second', data: { i } })));
      // Until the live worker's next heartbeat registers it again, the restored registry's entries have lapsed
      // and the admin knows no throttle 'api' (UnknownThrottleError): looked at again then.
      const holdKind = () => admin.throttleStats('api').then((stats) => stats.recoveryHold?.kind, (error: unknown) => {
        if (error instanceof UnknownThrottleError) return undefined;
        throw error;
      });
      await waitFor(async () => (await holdKind()) === 'window', 15_000, 'the hold for the hour');
      const { recoveryHold, at } = await admin.throttleStats('api');
      expect(recoveryHold!.until - at).toBeGreaterThan(HOUR - 60_000);
      expect(starts).toHaveLength(12);
      // The live worker says so on its next heartbeat: worker.on('throttle:recovery').
      await waitFor(() => holds.some((e) => e.hold?.kind === 'window'), 5_000, 'the throttle:recovery event');
      expect(holds.find((e) => e.hold?.kind === 'window')).toEqual({ throttle: 'api', hold: { kind: 'window', until: recoveryHold!.until } });
    } finally {
      await admin.close();
      await a.close();
      await queue.close();
    }
  }, 60_000);
});
