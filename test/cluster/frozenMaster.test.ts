import { Queue, QueueKeys } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { DeliveryVoidedError, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import pino from 'pino';
import { ExactDelivery } from '../../src/delivery/ExactDelivery';
import { InFlightRelease } from '../../src/delivery/inFlightRelease';
import { takeNextJobs, TakeReply } from '../../src/delivery/takeNextJobs';
import { nodeReplicasCall } from '../../src/lua/calls/nodeReplicas';
import { sendCall } from '../../src/lua/calls/scriptCall';
import { ScriptRunner } from '../../src/lua/scripts';
import { newClusterClient } from '../support/clusterClient';
import { RedisCluster, startRedisCluster } from '../support/redisCluster';
import { uniquePrefix } from '../support/redis';
import { done, notYet, sleep, waitUntil } from '../support/waitUntil';

// A master frozen past the node timeout (SIGSTOP) and replaced meanwhile runs, as it wakes and before it
// learns it was replaced, the calls it is sent as a master, on the counts it had when it froze: its successor
// has delivered since. The delivery calls here are on the socket when it wakes. A bare delivery call is
// answered with jobs (the hazard: their processors would run beside the new master's deliveries); exact
// delivery's call waits for a replica's acknowledgement, none comes, the node turns out to be deposed, and the
// call is void: no job starts (src/redis/ReplicaConfirmation.ts).
let cluster: RedisCluster;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await cluster?.stop();
});

function direct(port: number): Redis {
  const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null, lazyConnect: false });
  redis.on('error', () => undefined);
  closers.push(async () => redis.disconnect());
  return redis;
}

test('calls answered by a master replaced while frozen: a bare one delivers, exact delivery\'s is void', async () => {
  const prefix = '{bull}';
  const name = uniquePrefix('frozen');
  const client: Cluster = newClusterClient(cluster.seeds);
  closers.push(() => client.quit());
  // A worker that never runs registers and publishes the queue's config; the test makes the calls.
  const worker = new ThrottledWorker(name, null, { connection: client, prefix, autorun: false, throttles: [Throttle.named('api').limit(10, '1m')] });
  worker.on('error', () => undefined);
  closers.push(() => worker.close());
  await worker.waitUntilReady();
  const queue = new Queue(name, { connection: client, prefix });
  closers.push(() => queue.close());
  await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'call', data: { i } })));

  const keys = new ThrottleKeys(prefix);
  const queueKeys = keys.queue(name);
  const master = await cluster.masterOfKey(queueKeys.state);
  const gen = (await client.hget(queueKeys.state, 'gen'))!;
  const context = {
    bullmqKeys: new QueueKeys(prefix).getKeys(name), queueKeys, throttlePrefix: keys.throttlePrefix,
    lockDuration: 30_000, leaseMs: 0, durableRedis: false,
  };
  const bare = new ScriptRunner(direct(master.port));
  const confirmed = new ScriptRunner(direct(master.port));
  // Load both scripts on the node first: a call on the socket at wake must not need a second round trip.
  for (const runner of [bare, confirmed]) {
    await takeNextJobs(runner, { ...context, tokens: ['load'], workerName: '', gen, lateAfterUs: 1 });
    await sendCall(runner, nodeReplicasCall({ record: queueKeys.node, graceMs: 2_000 }));
  }
  // The loading calls were late: they delivered nothing (the jobs may have been filed into their class).
  expect(await client.llen(context.bullmqKeys.active)).toBe(0);

  await cluster.kill(master.port, 'SIGSTOP');
  let bareReply: Promise<TakeReply> | undefined;
  let exactReply: Promise<TakeReply> | undefined;
  try {
    await waitUntil(`a master other than ${master.port}`, async () => {
      const now = await cluster.masterOfKey(queueKeys.state).catch(() => undefined);
      return now && now.port !== master.port ? done(undefined) : notYet(`served by ${now?.port ?? 'nobody'}`);
    }, { timeoutMs: 30_000, intervalMs: 100 });
    bareReply = takeNextJobs(bare, { ...context, tokens: ['a1', 'a2', 'a3'], workerName: '', gen, lateAfterUs: 0 });
    exactReply = new ExactDelivery(() => confirmed, () => context, queueKeys.node, new InFlightRelease(() => confirmed, queueKeys, pino({ level: 'silent' })), keys).take({ tokens: ['b1', 'b2', 'b3'], name: '', gen });
    exactReply.catch(() => undefined);
    await sleep(200);
  } finally {
    await cluster.kill(master.port, 'SIGCONT');
  }
  const bareJobs = (await bareReply!).jobs;
  const exact = await exactReply!.then((reply) => reply, (error: unknown) => error);
  process.stderr.write(`bare call: ${bareJobs.length} jobs delivered by the deposed master; exact delivery: ${exact instanceof Error ? exact.message : `${(exact as TakeReply).jobs.length} jobs`}\n`);
  expect(bareJobs.length).toBeGreaterThan(0);
  expect(exact).toBeInstanceOf(DeliveryVoidedError);

  // The deposed master's writes are gone: on the new master no job is active.
  await cluster.waitForStable(30_000);
  await waitUntil('the deposed master resynced as a replica', async () => {
    const active = await client.llen(context.bullmqKeys.active).catch(() => -1);
    return active === 0 ? done(undefined) : notYet(`${active} active`);
  }, { timeoutMs: 30_000, intervalMs: 200 });
  expect((await queue.getJobs(['active', 'completed', 'failed'])).length).toBe(0);
}, 120_000);
