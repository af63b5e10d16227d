import { Worker } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import pino from 'pino';
import { isClusterClient, mastersOf } from '../../src/redis/clusterNodes';
import { forgetEvictionWarnings, warnIfEvicting } from '../../src/redis/evictionPolicyWarning';
import { deleteKeysUnder, keysUnder } from '../../src/redis/keysUnder';
import { redisTimeMs } from '../../src/redis/redisClock';
import { PlainWorkerDetector } from '../../src/queueState/plainWorkerDetector';
import { capturingLogger, waitFor } from '../support/bullmq';
import { parseInfo } from '../support/redisAdmin';
import { useRedisCluster } from '../support/clusterSuite';

// Commands that answer for one node (TIME, SCAN, CLIENT LIST, INFO, CONFIG GET), asked of the right ones.
const suite = useRedisCluster();

async function masterPorts(): Promise<number[]> {
  return (await suite.cluster.nodes()).filter((n) => n.role === 'master' && n.slots.length > 0).map((n) => n.port);
}

/** Scripts run on each master so far (EVALSHA, or EVAL when the script was not loaded yet). */
async function scriptCalls(): Promise<Map<number, number>> {
  const calls = new Map<number, number>();
  for (const port of await masterPorts()) {
    const info = parseInfo(String(await suite.cluster.command(port, 'INFO', 'commandstats')));
    const count = (name: string) => Number(/calls=(\d+)/.exec(info.get(`cmdstat_${name}`) ?? '')?.[1] ?? 0);
    calls.set(port, count('evalsha') + count('eval'));
  }
  return calls;
}

test('the Cluster suite.client is told apart from a Redis, and its masters are every node serving slots', async () => {
  expect(isClusterClient(suite.client)).toBe(true);
  const masters = await mastersOf(suite.client);
  expect(masters.map((m) => m.options.port).sort()).toEqual((await masterPorts()).sort());
});

test('redisTimeMs reads the clock of the master that holds the key', async () => {
  for (const key of ['{orders}:x', '{refunds}:x', 'bull::throttle:{bull}:x']) {
    const owner = (await suite.cluster.masterOfKey(key)).port;
    const before = await scriptCalls();
    const [seconds] = (await suite.cluster.command(owner, 'TIME')) as string[];
    const ms = await redisTimeMs(suite.client, key);
    expect(Math.abs(ms - Number(seconds) * 1000)).toBeLessThan(60_000);
    const after = await scriptCalls();
    for (const [port, calls] of after) expect(calls - before.get(port)!).toBe(port === owner ? 1 : 0);
  }
});

test('keysUnder scans every master; deleteKeysUnder deletes one key per DEL (never across slots)', async () => {
  const keys = ['{a}', '{b}', '{c}', '{d}', '{e}', '{f}', '{g}', '{h}'].map((tag) => `scan-test:${tag}:k`);
  for (const key of keys) await suite.client.set(key, '1');
  const owners = new Set(await Promise.all(keys.map(async (key) => (await suite.cluster.masterOfSlot(calculateSlot(key))).port)));
  expect(owners.size).toBeGreaterThan(1);
  expect((await keysUnder(suite.client, 'scan-test:')).sort()).toEqual([...keys].sort());
  expect(await deleteKeysUnder(suite.client, 'scan-test:')).toBe(keys.length);
  expect(await keysUnder(suite.client, 'scan-test:')).toEqual([]);
});

test('warnIfEvicting asks every master and names the one that may evict', async () => {
  const ports = await masterPorts();
  await suite.cluster.command(ports[1], 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
  const spy = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  try {
    forgetEvictionWarnings();
    const { logger, lines } = capturingLogger();
    expect(await warnIfEvicting(suite.client, logger)).toBe('allkeys-lru');
    const warnings = lines.filter((l) => /maxmemory-policy/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].msg).toContain(`Redis at 127.0.0.1:${ports[1]} has maxmemory-policy 'allkeys-lru'`);
    await suite.cluster.command(ports[1], 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    forgetEvictionWarnings();
    expect(await warnIfEvicting(suite.client, logger)).toBe('noeviction');
    expect(lines.filter((l) => /maxmemory-policy/.test(l.msg))).toHaveLength(1);
  } finally {
    spy.mockRestore();
    await suite.cluster.command(ports[1], 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
  }
});

test('PlainWorkerDetector counts a queue\'s workers on the master where they block, once each', async () => {
  const queue = '{detect}';
  const detector = new PlainWorkerDetector(suite.client, 'bull', queue, pino({ level: 'silent' }));
  expect(await detector.consumers()).toBe(0);
  const workers = [0, 1].map(() => {
    const worker = new Worker(queue, async () => undefined, { connection: suite.client });
    worker.on('error', () => undefined);
    return worker;
  });
  try {
    // Each worker's name is on its queue's master (BZPOPMIN) and, from its ready check, maybe on another:
    // added up they would count more than two.
    await waitFor(async () => (await detector.consumers()) === 2, 20_000, 'both workers to block on the queue');
    for (let i = 0; i < 10; i++) expect(await detector.consumers()).toBe(2);
  } finally {
    for (const worker of workers) await worker.close();
  }
});
