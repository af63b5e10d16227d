import { Job, Queue } from 'bullmq';
import { InvalidThrottleError, Key, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { useRedisCluster } from '../support/clusterSuite';
import { capturingLogger, waitFor } from '../support/bullmq';
import { uniquePrefix } from '../support/redis';
import { worstRateExcess } from '../model/rateModel';

// Rates in leased delivery: queues on other slots than their namespace's grantor spend tokens up to h after the
// grant, so the grantor grants a rate h short of its burst (lua/includes/rateCounter.lua).
const suite = useRedisCluster();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** processedOn is whole ms: a span read from it may be 1 ms short of the grants'. */
const excess = (msTimes: number[], rate: { n: number; perMs: number; burst: number }) => worstRateExcess(msTimes.map((ms) => ms * 1000), rate) - rate.n / rate.perMs;

test('two queues on different slots share a rate and a keyed rate in leased delivery: within both, each job once', async () => {
  const prefix = uniquePrefix('clr');
  const keys = new ThrottleKeys(prefix);
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  const queues: string[] = [];
  for (let i = 0; queues.length < 2 && i < 200; i++) {
    if ((await suite.cluster.masterOfKey(keys.queue(`{r${i}}`).state)).port !== grantorPort) queues.push(`{r${i}}`);
  }
  const { logger, lines } = capturingLogger();
  // h = 100 ms: a burst of at least 1 + 30 * 0.1 = 4.
  const shared = Throttle.named('mail').rate(30, '1s', { burst: 6 });
  const perCustomer = Throttle.named('mail-per-customer').key([Key.data('customer')]).rate(8, '1s', { burst: 4 });
  const starts: { at: number; customer: string; id: string }[] = [];
  for (const name of queues) {
    const queue = new Queue(name, { connection: suite.client, prefix });
    closers.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 45 }, (_, i) => ({ name: 'send', data: { customer: ['acme', 'globex', 'initech'][i % 3] } })));
    const worker = new ThrottledWorker(name, async (job: Job) => {
      starts.push({ at: job.processedOn!, customer: job.data.customer, id: `${name}/${job.id}` });
    }, { connection: suite.client, prefix, concurrency: 5, throttles: [shared, perCustomer], logger });
    worker.on('error', () => undefined);
    closers.push(() => worker.close());
  }
  await waitFor(() => starts.length === 90, 60_000, 'every job delivered');
  expect(lines.filter((line) => line.msg === 'leased delivery')).toHaveLength(2);
  expect(new Set(starts.map((s) => s.id)).size).toBe(90);
  expect(excess(starts.map((s) => s.at), { n: 30, perMs: 1000, burst: 6 })).toBeLessThanOrEqual(0);
  for (const customer of ['acme', 'globex', 'initech']) {
    expect(excess(starts.filter((s) => s.customer === customer).map((s) => s.at), { n: 8, perMs: 1000, burst: 4 })).toBeLessThanOrEqual(0);
  }
}, 120_000);

test('a rate whose burst cannot cover h fails the leased worker at start, naming the fix', async () => {
  const prefix = uniquePrefix('clr');
  const keys = new ThrottleKeys(prefix);
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  let name = '';
  for (let i = 0; !name && i < 200; i++) {
    if ((await suite.cluster.masterOfKey(keys.queue(`{s${i}}`).state)).port !== grantorPort) name = `{s${i}}`;
  }
  const worker = new ThrottledWorker(name, async () => undefined, {
    connection: suite.client, prefix, throttles: [Throttle.named('mail').rate(30, '1s')], autorun: false,
  });
  worker.on('error', () => undefined);
  closers.push(() => worker.close());
  const failure = await worker.waitUntilReady().then(() => null, (error: unknown) => error);
  expect(failure).toBeInstanceOf(InvalidThrottleError);
  expect((failure as Error).message).toMatch(/rate\(30, '1s', \{ burst: 1 \}\) cannot be kept in leased delivery with leaseMs 100.*Raise burst to at least 4/);
});
