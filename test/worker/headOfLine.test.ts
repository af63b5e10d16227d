import IORedis, { Redis } from 'ioredis';
import { Key, Missing, Throttle } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/** Redis commands executed (scripts and the commands inside them), from INFO commandstats. */
async function commandsExecuted(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!['info', 'config|resetstat'].includes(match[1])) total += Number(match[2]);
  }
  return total;
}

describe('no head-of-line blocking', () => {
  // Its own Redis, so that command counts are this test's alone.
  let server: LocalRedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startLocalRedisServer();
    redis = new IORedis(server.url, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await redis.quit();
    await server.stop();
  });

  const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(2, '1h');

  async function deliverOthers(backlog: number): Promise<{ commandsPerDelivery: number }> {
    const bed = new WorkerTestBed(`hol${backlog}`, server.url);
    try {
      const queue = bed.queue('mixed');
      for (let i = 0; i < backlog; i += 1000) {
        await queue.addBulk(Array.from({ length: Math.min(1000, backlog - i) }, () => ({ name: 'charge', data: { customer: 'big' } })));
      }
      let bigDelivered = 0;
      let others = 0;
      const worker = bed.worker('mixed', async (job) => { if (job.data.customer === 'big') bigDelivered++; else others++; }, { concurrency: 10, throttles: [perCustomer] });
      // Let the backlog be classified and its bucket fill before measuring.
      await waitFor(async () => (await queue.getWaitingCount()) === 0 && bigDelivered === Math.min(2, backlog), 60_000, 'backlog classified');
      await new Promise((r) => setTimeout(r, 200));
      const before = await commandsExecuted(redis);
      const othersAdded = 400;
      await queue.addBulk(Array.from({ length: othersAdded }, (_, i) => (i % 2 === 0
        ? { name: 'charge', data: { customer: `small-${i}` } }
        : { name: 'email', data: {} })));
      await waitFor(() => others === othersAdded, 60_000, 'other buckets delivered');
      const after = await commandsExecuted(redis);
      await worker.close();
      return { commandsPerDelivery: (after - before) / othersAdded };
    } finally {
      await bed.close(redis);
    }
  }

  it('delivers other buckets past 20,000 held jobs at the same cost per delivery as with none held', async () => {
    const without = await deliverOthers(0);
    const withBacklog = await deliverOthers(20_000);
    process.stderr.write(`commands per delivery: ${without.commandsPerDelivery.toFixed(1)} without backlog, ${withBacklog.commandsPerDelivery.toFixed(1)} with 20,000 held\n`);
    expect(withBacklog.commandsPerDelivery).toBeLessThanOrEqual(without.commandsPerDelivery * 1.25 + 2);
  });

  it('sleeps while nothing can go: no polling of Redis', async () => {
    const bed = new WorkerTestBed('sleep', server.url);
    try {
      const queue = bed.queue('blocked');
      await queue.addBulk(Array.from({ length: 50 }, () => ({ name: 'charge', data: { customer: 'big' } })));
      let delivered = 0;
      bed.worker('blocked', async () => { delivered++; }, { concurrency: 5, throttles: [perCustomer], declarationTtlMs: 60_000 });
      await waitFor(() => delivered === 2, 10_000, 'the bucket to fill');
      await new Promise((r) => setTimeout(r, 300));
      const before = await commandsExecuted(redis);
      await new Promise((r) => setTimeout(r, 2000));
      const after = await commandsExecuted(redis);
      // Blocked on the marker (BZPOPMIN, up to 10 s) with a heartbeat every 20 s: a handful at most.
      expect(after - before).toBeLessThan(20);
      expect(delivered).toBe(2);
    } finally {
      await bed.close(redis);
    }
  });
});
