import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Throttle, ThrottledWorker } from '../../src';
import { waitFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { ReplyDroppingProxy } from '../support/replyDroppingProxy';
import { testRedisUrl } from '../support/testRedis';

// A completion that ran in Redis but whose reply was lost with its connection (as in a failover): ioredis sends it
// again after reconnecting, the second send finds the job's lock gone (or the job removed), and the worker reports
// the job completed, once, as it is. bullmq's own moveToFinished would throw "Missing lock" into handleFailed.
describe('a completion whose reply is lost', () => {
  let redis: Redis;
  let proxy: ReplyDroppingProxy;
  const closers: (() => Promise<unknown>)[] = [];
  const prefixes: string[] = [];

  beforeEach(async () => {
    redis = newRedis();
    const url = new URL(testRedisUrl());
    proxy = new ReplyDroppingProxy({ host: url.hostname, port: Number(url.port || 6379) });
    await proxy.start();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await proxy.stop();
    for (const prefix of prefixes.splice(0)) await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });

  async function run(removeOnComplete: boolean): Promise<void> {
    const prefix = uniquePrefix('lostreply');
    prefixes.push(prefix);
    const queue = new Queue('orders', { connection: redis, prefix, defaultJobOptions: { removeOnComplete } });
    closers.push(() => queue.close());
    const runs: string[] = [];
    const completed: string[] = [];
    const failed: string[] = [];
    const errors: string[] = [];
    const worker = new ThrottledWorker('orders', async (job) => {
      runs.push(job.id!);
      // The completion of job 'a' (the only call that names the completed set) runs, and its reply is lost.
      if (job.id === 'a') proxy.dropReplyOf(`${prefix}:orders:completed`);
      return 'done';
    }, {
      connection: { host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: null }, prefix, concurrency: 1,
      throttles: [Throttle.named('api').limit(100, '1s')],
    });
    closers.push(() => worker.close());
    worker.on('completed', (job) => completed.push(job.id!));
    worker.on('failed', (job) => failed.push(job!.id!));
    worker.on('error', (error) => errors.push(error.message));
    await worker.waitUntilReady();
    await queue.add('pay', {}, { jobId: 'a' });
    await waitFor(() => completed.includes('a') || failed.length > 0 || errors.length > 0, 15_000, "job a's completion");
    await queue.add('pay', {}, { jobId: 'b' });
    await waitFor(() => completed.includes('b') || failed.length > 0, 15_000, 'job b');
    expect(proxy.dropped).toBe(1);
    expect({ runs, completed, failed, errors }).toEqual({ runs: ['a', 'b'], completed: ['a', 'b'], failed: [], errors: [] });
    expect(await queue.getJobState('a')).toBe(removeOnComplete ? 'unknown' : 'completed');
  }

  it('is reported completed once, not failed (kept in the completed set)', async () => {
    await run(false);
  });

  it('is reported completed once, not failed (removed on completion)', async () => {
    await run(true);
  });
});
