import { Job, Queue } from 'bullmq';
import { Cost, Grantor, Key, mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { useRedisCluster } from '../support/clusterSuite';
import { capturingLogger, waitFor } from '../support/bullmq';
import { mostCostAtOnce } from '../support/inFlight';
import { uniquePrefix } from '../support/redis';

// ThrottledWorkers on a real 3-master, 3-replica Redis Cluster: queues on slots of their own lease tokens
// from their namespace's grantor; a queue in the grantor's slot delivers exactly, with no lease.
const suite = useRedisCluster();
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});


function track<T extends { close(): Promise<unknown> }>(thing: T): T {
  closers.push(() => thing.close());
  return thing;
}

interface Start { at: number; queue: string; customer: string; id: string }

async function runQueues(prefix: string, queues: string[], jobsEach: number, throttles: Throttle[], extra: { logger?: ReturnType<typeof capturingLogger>['logger'] } = {}): Promise<Start[]> {
  const starts: Start[] = [];
  for (const name of queues) {
    const queue = track(new Queue(name, { connection: suite.client, prefix }));
    await queue.addBulk(Array.from({ length: jobsEach }, (_, i) => ({ name: 'pay', data: { customer: ['acme', 'globex', 'initech'][i % 3] } })));
    const worker = track(new ThrottledWorker(name, async (job: Job) => {
      starts.push({ at: job.processedOn!, queue: name, customer: job.data.customer, id: `${name}/${job.id}` });
    }, { connection: suite.client, prefix, concurrency: 5, throttles, logger: extra.logger }));
    worker.on('error', () => undefined);
  }
  await waitFor(() => starts.length === queues.length * jobsEach, 60_000, 'every job delivered');
  return starts;
}

test('two queues on different slots share one throttle and a keyed one: within both limits, each job once', async () => {
  const prefix = uniquePrefix('cl');
  const keys = new ThrottleKeys(prefix);
  const slotsOf = await Promise.all(['{orders}', '{refunds}'].map(async (q) => (await suite.cluster.masterOfKey(keys.queue(q).state)).port));
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  process.stderr.write(`queues on nodes ${slotsOf.join(', ')}; grantor on ${grantorPort}\n`);
  const { logger, lines } = capturingLogger();
  const stripe = Throttle.named('stripe').limit(12, '1s');
  const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(5, '1s');
  const starts = await runQueues(prefix, ['{orders}', '{refunds}'], 18, [stripe, perCustomer], { logger });
  expect(lines.filter((line) => line.msg === 'leased delivery')).toHaveLength(2);
  expect(new Set(starts.map((s) => s.id)).size).toBe(36);
  expect(mostInAnyWindow(starts.map((s) => s.at), 1000)).toBeLessThanOrEqual(12);
  for (const customer of ['acme', 'globex', 'initech']) {
    expect(mostInAnyWindow(starts.filter((s) => s.customer === customer).map((s) => s.at), 1000)).toBeLessThanOrEqual(5);
  }
  const admin = new ThrottleAdmin({ connection: suite.client, prefix });
  try {
    const stats = await admin.throttleStats('stripe');
    expect(stats.queues).toEqual(['{orders}', '{refunds}']);
    expect(stats.deliveredTotal).toBe(36);
  } finally {
    await admin.close();
  }
}, 90_000);

test('two queues on different slots share a per-key concurrency with costs beside a window, leased: never more than n in flight per key', async () => {
  const prefix = uniquePrefix('clc');
  const keys = new ThrottleKeys(prefix);
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  const queues: string[] = [];
  for (let i = 0; queues.length < 2 && i < 200; i++) {
    if ((await suite.cluster.masterOfKey(keys.queue(`{c${i}}`).state)).port !== grantorPort) queues.push(`{c${i}}`);
  }
  const { logger, lines } = capturingLogger();
  const perDomain = Throttle.named('crawl').key([Key.data('customer')]).cost(Cost.data('pages')).concurrency(4);
  const all = Throttle.named('crawl-all').limit(200, '1s');
  const spans: { customer: string; from: number; to: number; cost: number }[] = [];
  for (const name of queues) {
    const queue = track(new Queue(name, { connection: suite.client, prefix }));
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'page', data: { customer: ['acme', 'globex'][i % 2], pages: 1 + (i % 3) } })));
    const worker = track(new ThrottledWorker(name, async (job: Job) => {
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.floor(Math.random() * 40)));
      spans.push({ customer: job.data.customer, from: job.processedOn!, to: Date.now(), cost: job.data.pages });
    }, { connection: suite.client, prefix, concurrency: 6, throttles: [perDomain, all], logger }));
    worker.on('error', () => undefined);
  }
  await waitFor(() => spans.length === 60, 60_000, 'every job ran');
  expect(lines.filter((line) => line.msg === 'leased delivery')).toHaveLength(2);
  for (const customer of ['acme', 'globex']) {
    const mine = spans.filter((s) => s.customer === customer);
    expect(mostCostAtOnce(mine)).toBeLessThanOrEqual(4);
    expect(mostCostAtOnce(mine)).toBeGreaterThanOrEqual(3);
  }
}, 90_000);

test("a queue in the namespace's slot delivers exactly, with no lease", async () => {
  const { logger, lines } = capturingLogger();
  const starts = await runQueues('{exact}', ['orders'], 12, [Throttle.named('mail').limit(6, '1s')], { logger });
  expect(lines.find((line) => line.msg === 'exact delivery')).toBeDefined();
  expect(mostInAnyWindow(starts.map((s) => s.at), 1000)).toBeLessThanOrEqual(6);
}, 60_000);

test('Grantor grants and returns one delivery drawing from two throttles', async () => {
  const grantor = track(new Grantor({ connection: suite.client, prefix: uniquePrefix('gr') }));
  const a = Throttle.named('a').limit(2, '1m');
  const b = Throttle.named('b').key([Key.data('k')]).limit(1, '1m');
  const [first, second] = await grantor.grant([[{ throttle: a }, { throttle: b, key: ['x'] }], [{ throttle: a }, { throttle: b, key: ['x'] }]]);
  expect(first.granted).toBe(true);
  expect(second.granted).toBe(false);
  expect(await grantor.returnTokens([(first as { id: string }).id])).toBe(2);
  expect((await grantor.grant([[{ throttle: a }, { throttle: b, key: ['x'] }]]))[0].granted).toBe(true);
});
