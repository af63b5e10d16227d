import { Job, Queue } from 'bullmq';
import { Key, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { useRedisCluster } from '../support/clusterSuite';
import { waitFor } from '../support/bullmq';
import { uniquePrefix } from '../support/redis';

// A pause in leased delivery: the grantor (another master) grants nothing for a paused bucket, and a resume
// reaches the queues on other masters.
const suite = useRedisCluster();

test('a bucket paused on the grantor holds a leased queue\'s jobs until resumed, the others flow', async () => {
  const prefix = uniquePrefix('clp');
  const keys = new ThrottleKeys(prefix);
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  let name = '';
  for (let i = 0; !name && i < 200; i++) {
    if ((await suite.cluster.masterOfKey(keys.queue(`{p${i}}`).state)).port !== grantorPort) name = `{p${i}}`;
  }
  const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(50, '1s');
  const starts: { at: number; customer: string }[] = [];
  const queue = new Queue(name, { connection: suite.client, prefix });
  const worker = new ThrottledWorker(name, async (job: Job) => { starts.push({ at: job.processedOn!, customer: job.data.customer }); }, {
    connection: suite.client, prefix, concurrency: 4, throttles: [perCustomer],
  });
  worker.on('error', () => undefined);
  const admin = new ThrottleAdmin({ connection: suite.client, prefix });
  try {
    await worker.waitUntilReady();
    await admin.pause('api-per-customer', { key: ['acme'] });
    await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    await waitFor(() => starts.filter((s) => s.customer === 'globex').length === 10, 15_000, 'globex delivered');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(starts.filter((s) => s.customer === 'acme')).toEqual([]);
    expect(await admin.resume('api-per-customer', { key: ['acme'] })).toBe(1);
    await waitFor(() => starts.length === 20, 15_000, 'acme delivered after the resume');
  } finally {
    await admin.close();
    await worker.close();
    await queue.close();
  }
}, 60_000);
