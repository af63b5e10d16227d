import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { connectionFor, waitFor } from '../support/bullmq';
import { uniquePrefix } from '../support/redis';

// In leased delivery the grantor's scripts (leaseTokens-1.lua, renewHolds-1.lua) keep the throttle's bucket
// indexes (lua/includes/bucketIndexes.lua) for a rate and a concurrency as exact delivery does.
describe('leased delivery: throttleStats counts rate and concurrency buckets', () => {
  let queueServer: LocalRedisServer;
  let grantorServer: LocalRedisServer;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    queueServer = await startLocalRedisServer();
    grantorServer = await startLocalRedisServer();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(async () => {
    for (const server of [queueServer, grantorServer]) await server.stop();
  });

  it('buckets held by workers are active, those at n at their limit; a rate bucket while its time is ahead; none held once the workers closed', async () => {
    const prefix = uniquePrefix('lidx');
    // a: 2 jobs held in flight (concurrency full), b: 1; t1's rate, one per 10 minutes, stays active long after its mail
    // (at its limit only for a lease's length in leased delivery: its burst is granted short by h, includes/rateCounter).
    const perCustomer = Throttle.named('crawl').key([Key.data('customer')]).concurrency(2);
    const perTenant = Throttle.named('mail').key([Key.data('tenant')]).rate(1, '10m', { burst: 2 });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    const started: string[] = [];
    const queueOf = (name: string): Queue => {
      const queue = new Queue(name, { connection: connectionFor(queueServer.url), prefix });
      closers.push(() => queue.close());
      return queue;
    };
    const workerOf = (name: string, throttle: Throttle): ThrottledWorker => {
      const worker = new ThrottledWorker(name, async (job: Job) => {
        started.push(job.data.customer ?? job.data.tenant);
        if (job.data.customer) await gate;
      }, { connection: connectionFor(queueServer.url), prefix, concurrency: 8, throttles: [throttle], grantor: { connection: connectionFor(grantorServer.url) } });
      worker.on('error', () => undefined);
      closers.push(() => worker.close());
      return worker;
    };
    const pages = queueOf('pages');
    const mails = queueOf('mails');
    const worker = workerOf('pages', perCustomer);
    workerOf('mails', perTenant);
    const admin = new ThrottleAdmin({ connection: connectionFor(queueServer.url), prefix, grantor: { connection: connectionFor(grantorServer.url) } });
    closers.push(() => admin.close());
    try {
      await pages.addBulk(['a', 'a', 'b'].map((customer) => ({ name: 'page', data: { customer } })));
      await mails.add('mail', { tenant: 't1' });
      await waitFor(() => started.length === 4, 20_000, '3 jobs in flight and a mail sent').catch((error) => { throw new Error(`${error.message}: started ${started.join()}`); });
      const crawl = await admin.throttleStats('crawl');
      expect({ active: crawl.activeBuckets, atLimit: crawl.bucketsAtLimit }).toEqual({ active: 2, atLimit: 1 });
      const mail = await admin.throttleStats('mail');
      expect(mail.activeBuckets).toBe(1);
      open();
      await waitFor(async () => (await pages.getCompletedCount()) === 3, 20_000, 'every page job completed');
      // A closing worker drops what it holds (renewHolds-1.lua with 0): no bucket is held any more. (Its declaration
      // goes with it, so the indexes are read as throttleStats reads them.)
      await worker.close();
      const grantor = new Redis(grantorServer.url);
      closers.push(() => grantor.quit());
      const indexes = new ThrottleKeys(prefix).throttleIndexes('crawl');
      const now = async () => { const [s, us] = await grantor.time(); return Number(s) * 1000 + Math.floor(Number(us) / 1000); };
      await waitFor(async () => (await grantor.zcount(indexes.active, `(${await now()}`, '+inf')) === 0, 20_000, 'no crawl bucket active');
      expect(await grantor.zcount(indexes.full, `(${await now()}`, '+inf')).toBe(0);
    } finally {
      open();
    }
  });
});
