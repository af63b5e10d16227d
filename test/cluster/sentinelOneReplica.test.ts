import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { DeliveryVoidedError, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { ExactDelivery } from '../../src/delivery/ExactDelivery';
import { takeNextJobs, TakeReply } from '../../src/delivery/takeNextJobs';
import { nodeReplicasCall } from '../../src/lua/calls/nodeReplicas';
import { sendCall } from '../../src/lua/calls/scriptCall';
import { ScriptRunner } from '../../src/lua/scripts';
import { SentinelVouch } from '../../src/redis/sentinelVouch';
import { InFlightRelease } from '../../src/delivery/inFlightRelease';
import { describeVerdict, FailoverLoad, verdict } from '../support/failoverLoad';
import { uniquePrefix } from '../support/redis';
import { RedisSentinel, startRedisSentinel } from '../support/redisSentinel';
import { newSentinelClient } from '../support/sentinelClient';
import { done, notYet, sleep, waitUntil } from '../support/waitUntil';

// Issue 26: Sentinel with one replica, as docs/cluster.md documents it (min-replicas-to-write left at 0, its
// default: with 1, the promoted replica has no replica of its own and refuses every write after a failover).
// The guarantee then rests on the replica confirmation and on the sentinels: a master that lost its only replica
// delivers only once a majority of the sentinels name it the master (src/redis/sentinelVouch.ts).
let setup: RedisSentinel;
const closers: (() => Promise<unknown>)[] = [];
const loads: FailoverLoad[] = [];
const THROTTLE = { name: 'api', max: 60, windowMs: 1_000 };

beforeEach(async () => {
  setup = await startRedisSentinel({ replicas: 1 });
}, 120_000);

afterEach(async () => {
  for (const load of loads.splice(0)) load.kill();
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await setup?.stop();
});

function direct(port: number): Redis {
  const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  closers.push(async () => redis.disconnect());
  return redis;
}

test('kill -9 of the master of a one-replica set under load: delivery resumes on the promoted replica, every job Redis keeps completes, the limit holds', async () => {
  const load = FailoverLoad.start({
    connection: { kind: 'sentinel', sentinels: setup.sentinels, name: setup.name, failoverSettings: true },
    queues: [
      { label: 'ThrottledWorker', kind: 'throttled', name: 'thr-one', prefix: 'one', concurrency: 10, throttle: THROTTLE },
      { label: 'plain bullmq', kind: 'plain', name: 'plain-one', prefix: 'one', concurrency: 10 },
    ],
    ratePerSec: 40, processMs: 20, lockDurationMs: 10_000, stalledIntervalMs: 5_000, settleMs: 30_000,
  });
  loads.push(load);
  await load.ready;
  await sleep(3_000);
  const faultAt = Date.now();
  await setup.kill(await setup.masterPort(), 'SIGKILL');
  await setup.waitForStable(60_000);
  const promotedAt = Date.now();
  await sleep(5_000);
  const addingUntil = Date.now();
  const result = await load.finish();
  const [throttled, plain] = result.queues;
  const ours = verdict(throttled, faultAt, THROTTLE.windowMs, addingUntil);
  const theirs = verdict(plain, faultAt, THROTTLE.windowMs, addingUntil);
  process.stderr.write(`sentinel, one replica, kill -9: promoted ${promotedAt - faultAt} ms after the kill; pause in job starts ThrottledWorker ${ours.gapMs} ms, plain bullmq ${theirs.gapMs} ms\n`
    + `  ${describeVerdict(ours, throttled)}\n  ${describeVerdict(theirs, plain)}\n  the load's log: ${load.logFile}\n`);
  expect(result.unhandled).toEqual([]);
  expect(result.uncaught).toEqual([]);
  expect(throttled.failed).toEqual([]);
  expect(ours.failedAfterReturn).toEqual([]);
  expect(ours.notCompleted).toEqual([]);
  expect(ours.completed + ours.lostByRedis.length).toBe(ours.added);
  // Delivery resumed by itself on the promoted replica, which has no replica (no NOREPLICAS with the documented settings).
  expect(throttled.starts.filter((s) => s.processedOn > promotedAt).length).toBeGreaterThan(0);
  expect(ours.mostInWindow).toBeLessThanOrEqual(THROTTLE.max);
  expect(ours.mostStartsInWindow).toBeLessThanOrEqual(THROTTLE.max);
}, 150_000);

test('a master frozen while its only replica was promoted: a bare call on it delivers as it wakes, exact delivery\'s call is void once the sentinels name another master', async () => {
  const prefix = uniquePrefix('frozen1');
  const name = 'orders';
  const client = newSentinelClient(setup);
  closers.push(async () => client.disconnect());
  const worker = new ThrottledWorker(name, null, { connection: client, prefix, autorun: false, throttles: [Throttle.named('api').limit(10, '1m')] });
  worker.on('error', () => undefined);
  closers.push(() => worker.close());
  await worker.waitUntilReady();
  const queue = new Queue(name, { connection: client, prefix });
  closers.push(() => queue.close());
  await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'call', data: { i } })));

  const keys = new ThrottleKeys(prefix);
  const queueKeys = keys.queue(name);
  const gen = (await client.hget(queueKeys.state, 'gen'))!;
  const context = {
    bullmqKeys: new QueueKeys(prefix).getKeys(name), queueKeys, throttlePrefix: keys.throttlePrefix,
    lockDuration: 30_000, leaseMs: 0, durableRedis: false,
  };
  const master = await setup.masterPort();
  const bare = new ScriptRunner(direct(master));
  const confirmed = new ScriptRunner(direct(master));
  for (const runner of [bare, confirmed]) {
    // Loads the scripts (a late call delivers nothing), and lets the node record its replica.
    await takeNextJobs(runner, { ...context, tokens: ['load'], workerName: '', gen, lateAfterUs: 1 });
    await sendCall(runner, nodeReplicasCall({ record: queueKeys.node, graceMs: 2_000 }));
  }
  expect(await client.llen(context.bullmqKeys.active)).toBe(0);

  await setup.kill(master, 'SIGSTOP');
  try {
    await waitUntil(`the sentinels to promote a node other than ${master}`, async () => {
      const now = await setup.masterPort().catch(() => master);
      return now !== master ? done(undefined) : notYet(`still ${master}`);
    }, { timeoutMs: 30_000, intervalMs: 100 });
  } finally {
    await setup.kill(master, 'SIGCONT');
  }
  // Awake, the old master is still a master (Sentinel demotes it some 10 s later), with no replica: its only
  // one was promoted.
  const vouch = new SentinelVouch({ sentinels: () => setup.sentinels, name: setup.name, connection: {} });
  const bareJobs = (await takeNextJobs(bare, { ...context, tokens: ['a1', 'a2', 'a3'], workerName: '', gen, lateAfterUs: 0 })).jobs;
  const exact = await new ExactDelivery(() => confirmed, () => context, queueKeys.node, new InFlightRelease(() => confirmed, queueKeys, pino({ level: 'silent' })), keys, vouch)
    .take({ tokens: ['b1', 'b2', 'b3'], name: '', gen })
    .then((reply: TakeReply) => reply, (error: unknown) => error);
  process.stderr.write(`one replica, frozen master: bare call ${bareJobs.length} jobs delivered by the deposed master; exact delivery: ${exact instanceof Error ? exact.message : `${(exact as TakeReply).jobs.length} jobs`}\n`);
  expect(bareJobs.length).toBeGreaterThan(0);
  expect(exact).toBeInstanceOf(DeliveryVoidedError);
  expect((exact as Error).message).toContain('sentinels');
}, 150_000);
