import { Job, Queue } from 'bullmq';
import { Cost, Key, mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { connectionFor, waitFor } from '../support/bullmq';
import { mostAtOnce, mostCostAtOnce } from '../support/inFlight';
import { uniquePrefix } from '../support/redis';

/**
 * concurrency(n) in leased delivery: each worker holds units of the bucket from the grantor and counts its own
 * jobs in them (src/delivery/leased/concurrencyHolds.ts). Queues on two Redis servers, and a queue beside the
 * grantor in exact delivery, share one throttle.
 */
describe('leased delivery with concurrency', () => {
  let servers: LocalRedisServer[];
  let grantorServer: LocalRedisServer;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    servers = [await startLocalRedisServer(), await startLocalRedisServer()];
    grantorServer = await startLocalRedisServer();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(async () => {
    for (const server of [...servers, grantorServer]) await server.stop();
  });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  function queueOn(url: string, name: string, prefix: string): Queue {
    const queue = new Queue(name, { connection: connectionFor(url), prefix });
    closers.push(() => queue.close());
    return queue;
  }

  function workerOn(url: string, name: string, prefix: string, processor: (job: Job) => Promise<void>, throttles: Throttle[], leased: boolean): ThrottledWorker {
    const worker = new ThrottledWorker(name, processor, {
      connection: connectionFor(url), prefix, concurrency: 8, throttles,
      ...(leased ? { grantor: { connection: connectionFor(grantorServer.url) } } : {}),
    });
    worker.on('error', () => undefined);
    closers.push(() => worker.close());
    return worker;
  }

  it('at most n per key in flight across queues on two Redis servers, beside a window limit; each key reaches n', async () => {
    const prefix = uniquePrefix('lconc');
    const perDomain = Throttle.named('scraper').key([Key.data('domain')]).concurrency(3);
    const all = Throttle.named('scraper-all').limit(400, '1s');
    const ended: { domain: string; from: number; to: number }[] = [];
    const processor = async (job: Job) => {
      await sleep(10 + Math.floor(Math.random() * 60));
      ended.push({ domain: job.data.domain, from: job.processedOn!, to: Date.now() });
    };
    const domains = ['a.example', 'b.example', 'c.example', 'd.example'];
    const queues = servers.map((server) => queueOn(server.url, 'pages', prefix));
    for (const server of servers) workerOn(server.url, 'pages', prefix, processor, [perDomain, all], true);
    for (const queue of queues) await queue.addBulk(Array.from({ length: 90 }, (_, i) => ({ name: 'page', data: { domain: domains[i % domains.length] } })));
    await waitFor(async () => (await Promise.all(queues.map((q) => q.getCompletedCount()))).every((n) => n === 90), 60_000, 'every job completed')
      .catch(async (error) => { throw new Error(`${error.message}: ${await Promise.all(queues.map((q) => q.getJobCounts()))}`); });
    const jobs = (await Promise.all(queues.map((q) => q.getJobs(['completed'], 0, -1)))).flat();
    expect(jobs).toHaveLength(180);
    for (const domain of domains) {
      // From processedOn to finishedOn: the spans bullmq records (both servers share this machine's clock).
      const spans = jobs.filter((j) => j.data.domain === domain).map((j) => ({ from: j.processedOn!, to: j.finishedOn! }));
      expect(mostAtOnce(spans)).toBeLessThanOrEqual(3);
      expect(mostAtOnce(ended.filter((e) => e.domain === domain))).toBeLessThanOrEqual(3);
      expect(mostAtOnce(spans)).toBe(3);
    }
    expect(mostInAnyWindow(jobs.map((j) => j.processedOn!), 1000)).toBeLessThanOrEqual(400);
  });

  it('an exact queue beside the grantor and a leased queue on another server share one concurrency', async () => {
    const prefix = uniquePrefix('lconc-mix');
    const single = Throttle.named('one-render').concurrency(2);
    const spans: { from: number; to: number; where: string }[] = [];
    const processor = (where: string) => async (job: Job) => {
      await sleep(20 + Math.floor(Math.random() * 40));
      spans.push({ from: job.processedOn!, to: Date.now(), where });
    };
    // The throttle's keys live on the grantor's Redis: a queue there delivers exactly, one elsewhere leases.
    const exactQueue = queueOn(grantorServer.url, 'render', prefix);
    const leasedQueue = queueOn(servers[0].url, 'render', prefix);
    workerOn(grantorServer.url, 'render', prefix, processor('exact'), [single], false);
    workerOn(servers[0].url, 'render', prefix, processor('leased'), [single], true);
    for (const queue of [exactQueue, leasedQueue]) await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'page', data: { i } })));
    await waitFor(() => spans.length === 80, 60_000, 'every job ran');
    expect(mostAtOnce(spans)).toBeLessThanOrEqual(2);
    expect(spans.some((s) => s.where === 'exact')).toBe(true);
    expect(spans.some((s) => s.where === 'leased')).toBe(true);
  });

  it('costs against a concurrency, leased: the jobs in flight of a bucket never cost more than n together; stats count the units held', async () => {
    const prefix = uniquePrefix('lconc-cost');
    const gpu = Throttle.named('gpu-slots').key([Key.data('cluster')]).cost(Cost.data('gpus')).concurrency(8);
    const spans: { cluster: string; from: number; to: number; cost: number }[] = [];
    const processor = async (job: Job) => {
      await sleep(20 + (job.data.gpus * 7) % 40);
      spans.push({ cluster: job.data.cluster, from: job.processedOn!, to: Date.now(), cost: job.data.gpus });
    };
    const queues = servers.map((server) => queueOn(server.url, 'training', prefix));
    for (const server of servers) workerOn(server.url, 'training', prefix, processor, [gpu], true);
    for (const queue of queues) {
      await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'train', data: { cluster: i % 2 ? 'east' : 'west', gpus: [1, 4, 2, 8, 3][i % 5] } })));
    }
    const admin = new ThrottleAdmin({ connection: connectionFor(servers[0].url), prefix, grantor: { connection: connectionFor(grantorServer.url) } });
    closers.push(() => admin.close());
    await waitFor(async () => (await admin.throttleBucket('gpu-slots', ['east'])).inFlight!.leased > 0, 10_000, 'units of east held by the leased workers');
    await waitFor(() => spans.length === 60, 60_000, 'every job ran');
    for (const cluster of ['east', 'west']) {
      const mine = spans.filter((s) => s.cluster === cluster);
      expect(mostCostAtOnce(mine)).toBeLessThanOrEqual(8);
      expect(mostCostAtOnce(mine)).toBeGreaterThanOrEqual(6);
    }
  });

  it('units a worker no longer uses go back: another queue\'s worker gets them', async () => {
    const prefix = uniquePrefix('lconc-back');
    const single = Throttle.named('one-slot').concurrency(1);
    const seen: string[] = [];
    const queues = servers.map((server) => queueOn(server.url, 'jobs', prefix));
    servers.forEach((server, i) => workerOn(server.url, 'jobs', prefix, async () => { seen.push(`q${i}`); }, [single], true));
    await queues[0].add('first', {});
    await waitFor(() => seen.length === 1, 10_000, 'the first queue\'s job');
    // The first worker's unit is idle now: given back within about a second, the other queue's job goes.
    await queues[1].add('second', {});
    await waitFor(() => seen.length === 2, 10_000, 'the second queue\'s job');
    expect(seen).toEqual(['q0', 'q1']);
  });
});
