import { Job, Queue } from 'bullmq';
import IORedis, { Redis } from 'ioredis';
import { Key, mostInAnyWindow, Throttle, ThrottledWorker } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { connectionFor, waitFor } from '../support/bullmq';
import { uniquePrefix } from '../support/redis';

/**
 * Leased delivery with the throttles on a Redis of their own (the grantor option): queues on two separate
 * Redis servers share one throttle.
 */
describe('a grantor on a separate Redis', () => {
  let queueServers: LocalRedisServer[];
  let grantorServer: LocalRedisServer;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    queueServers = [await startLocalRedisServer(), await startLocalRedisServer()];
    grantorServer = await startLocalRedisServer();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(async () => {
    for (const server of [...queueServers, grantorServer]) await server.stop();
  });

  function track<T extends { close(): Promise<unknown> }>(thing: T): T {
    closers.push(() => thing.close());
    return thing;
  }

  it('queues on two servers sharing a grantor stay within one limit together, every job delivered once', async () => {
    const prefix = uniquePrefix('lease');
    const throttle = Throttle.named('stripe').limit(10, '1s');
    const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(4, '1s');
    const starts: { at: number; customer: string; id: string }[] = [];
    for (const server of queueServers) {
      const queue = track(new Queue('payments', { connection: connectionFor(server.url), prefix }));
      await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'pay', data: { customer: i % 2 === 0 ? 'acme' : 'globex' } })));
      const worker = track(new ThrottledWorker('payments', async (job: Job) => {
        starts.push({ at: job.processedOn!, customer: job.data.customer, id: `${server.port}/${job.id}` });
      }, {
        connection: connectionFor(server.url), prefix, concurrency: 5, throttles: [throttle, perCustomer],
        grantor: { connection: connectionFor(grantorServer.url) },
      }));
      worker.on('error', () => undefined);
    }
    await waitFor(() => starts.length === 40, 30_000, 'every job delivered');
    expect(new Set(starts.map((s) => s.id)).size).toBe(40);
    expect(mostInAnyWindow(starts.map((s) => s.at), 1000)).toBeLessThanOrEqual(10);
    for (const customer of ['acme', 'globex']) {
      expect(mostInAnyWindow(starts.filter((s) => s.customer === customer).map((s) => s.at), 1000)).toBeLessThanOrEqual(4);
    }
    // The counters live on the grantor's Redis, none on the queues'.
    const grantor: Redis = new IORedis(grantorServer.url);
    try {
      expect((await grantor.keys(`${prefix}::throttle:*:b:*`)).length).toBeGreaterThan(0);
      for (const server of queueServers) {
        const redis = new IORedis(server.url);
        expect(await redis.keys(`${prefix}::throttle:*:b:*`)).toEqual([]);
        redis.disconnect();
      }
    } finally {
      grantor.disconnect();
    }
  });
});
