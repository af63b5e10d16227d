import { Queue, Worker } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import { useRedisCluster } from '../support/clusterSuite';
import { waitUntil, done, notYet } from '../support/waitUntil';

// Proves the cluster harness (test/support/redisCluster.ts) with plain bullmq: nothing of this package runs here.
const suite = useRedisCluster();

/** Adds `count` jobs to a plain bullmq Queue, processes them with a plain Worker, and returns what completed. */
async function processJobs(name: string, prefix: string | undefined, count: number): Promise<{ ids: string[]; jobKey: string }> {
  const queue = new Queue(name, { connection: suite.client, ...(prefix ? { prefix } : {}) });
  const completed: string[] = [];
  const worker = new Worker(name, async (job) => job.data.n * 2, { connection: suite.client, ...(prefix ? { prefix } : {}) });
  worker.on('error', () => undefined);
  worker.on('completed', (job, result) => { if (result === job.data.n * 2) completed.push(job.id ?? '?'); });
  try {
    const jobs = await queue.addBulk(Array.from({ length: count }, (_, n) => ({ name: 'smoke', data: { n } })));
    await waitUntil(`${count} jobs of ${name} to complete`, async () => (
      completed.length >= count ? done(undefined) : notYet(`${completed.length} completed`)
    ), { timeoutMs: 30_000 });
    return { ids: completed.sort(), jobKey: `${prefix ?? 'bull'}:${name}:${jobs[0].id}` };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

/** The key exists on `port` when asked without redirection, and every other master answers MOVED for it. */
async function expectKeyOnlyOn(key: string, port: number): Promise<void> {
  expect(await suite.cluster.command(port, 'EXISTS', key)).toBe(1);
  for (const node of (await suite.cluster.nodes()).filter((n) => n.role === 'master' && n.port !== port && !n.failing && n.pid !== undefined)) {
    await expect(suite.cluster.command(node.port, 'EXISTS', key)).rejects.toThrow(/MOVED/);
  }
}

test('starts 3 masters and 3 replicas covering every slot, each a process of its own', async () => {
  const nodes = await suite.cluster.nodes();
  expect(nodes).toHaveLength(6);
  const masters = nodes.filter((node) => node.role === 'master');
  expect(masters).toHaveLength(3);
  expect(masters.reduce((sum, node) => sum + node.slots.reduce((n, [a, b]) => n + b - a + 1, 0), 0)).toBe(16_384);
  expect(new Set(nodes.map((node) => node.pid)).size).toBe(6);
  for (const master of masters) expect((await suite.cluster.replicasOf(master.port))).toHaveLength(1);
  expect(suite.cluster.seeds.map((seed) => seed.port).sort()).toEqual(nodes.map((node) => node.port).sort());
});

test('plain bullmq processes jobs with the hash-tagged prefix {bull}, on the master masterOfKey names', async () => {
  const name = `harness-prefix-${process.pid}`;
  const queue = new Queue(name, { connection: suite.client, prefix: '{bull}' });
  try {
    const job = await queue.add('probe', { n: 1 });
    const key = `{bull}:${name}:${job.id}`;
    const master = await suite.cluster.masterOfKey(key);
    expect(master.slots.some(([a, b]) => calculateSlot(key) >= a && calculateSlot(key) <= b)).toBe(true);
    await expectKeyOnlyOn(key, master.port);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
  const { ids } = await processJobs(name, '{bull}', 5);
  expect(ids).toHaveLength(5);
});

test('plain bullmq processes jobs of a queue named {orders} under the default prefix, in the slot of "orders"', async () => {
  const name = '{orders}';
  const queue = new Queue(name, { connection: suite.client });
  try {
    const job = await queue.add('probe', { n: 1 });
    const key = `bull:${name}:${job.id}`;
    expect(calculateSlot(key)).toBe(calculateSlot('orders'));
    await expectKeyOnlyOn(key, (await suite.cluster.masterOfKey(key)).port);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
  const { ids } = await processJobs(name, undefined, 5);
  expect(ids).toHaveLength(5);
});

test('failover() promotes the replica of the {bull} master and bullmq keeps working', async () => {
  const before = await suite.cluster.masterOfKey('{bull}');
  const replica = await suite.cluster.replicaOf(before.port);
  await suite.cluster.failover(replica.port);
  const after = await suite.cluster.masterOfKey('{bull}');
  expect(after.port).toBe(replica.port);
  const demoted = (await suite.cluster.nodes()).find((node) => node.port === before.port);
  expect(demoted).toMatchObject({ role: 'replica', masterId: after.id });
  expect((await processJobs(`harness-failover-${process.pid}`, '{bull}', 5)).ids).toHaveLength(5);
});

test('kill(SIGKILL) of the {bull} master is followed by its replica taking over, and restart() brings it back as a replica', async () => {
  const before = await suite.cluster.masterOfKey('{bull}');
  const replica = await suite.cluster.replicaOf(before.port);
  await suite.cluster.kill(before.port, 'SIGKILL');
  await suite.cluster.waitForStable();
  const after = await suite.cluster.masterOfKey('{bull}');
  expect(after.port).toBe(replica.port);
  expect((await suite.cluster.nodes()).find((node) => node.port === before.port)).toMatchObject({ pid: undefined, failing: true });
  expect((await processJobs(`harness-kill-${process.pid}`, '{bull}', 5)).ids).toHaveLength(5);

  await suite.cluster.restart(before.port);
  const back = (await suite.cluster.nodes()).find((node) => node.port === before.port);
  expect(back).toMatchObject({ role: 'replica', masterId: after.id, failing: false });
  expect(back?.pid).toEqual(expect.any(Number));
});

test('SIGSTOP of a master past the node timeout promotes its replica; after SIGCONT the old master rejoins as a replica', async () => {
  const before = await suite.cluster.masterOfKey('{orders}');
  const replica = await suite.cluster.replicaOf(before.port);
  await suite.cluster.kill(before.port, 'SIGSTOP');
  await suite.cluster.waitForStable();
  expect((await suite.cluster.masterOfKey('{orders}')).port).toBe(replica.port);
  await suite.cluster.kill(before.port, 'SIGCONT');
  await suite.cluster.waitForStable();
  expect((await suite.cluster.nodes()).find((node) => node.port === before.port)).toMatchObject({ role: 'replica', failing: false });
  expect((await processJobs('{orders}', undefined, 5)).ids).toHaveLength(5);
});
