import { ThrottleKeys } from '../../src';
import { RedisCluster, startRedisCluster } from '../support/redisCluster';
import { describeVerdict, FailoverLoad, verdict } from '../support/failoverLoad';
import { done, notYet, sleep, waitUntil } from '../support/waitUntil';

// Issue 11, "Failover and restarts", worker side, leased delivery: a ThrottledWorker on the queue '{orders}' under a
// prefix without a hash tag (the queue in its own slot, its throttle namespace in another slot on another master: it
// leases tokens from that grantor) and a plain bullmq Worker on '{orders}' under another prefix (the same slot), under
// the same steady load, while the queue's master, then the grantor's master, is killed with kill -9. Every job Redis
// keeps completes, none whose processor returned fails, no unhandled rejection, delivery resumes by itself; pauses are
// printed next to plain bullmq's. The throttle's bound across the grantor's failover is rules 3 and 4 (a new grantor
// waits h and rebuilds its counts): it is checked here too.
let cluster: RedisCluster;
const loads: FailoverLoad[] = [];
const THROTTLE = { name: 'api', max: 60, windowMs: 1_000 };

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);

afterEach(() => {
  for (const load of loads.splice(0)) load.kill();
});

afterAll(async () => {
  await cluster?.stop();
});

/** A prefix without a hash tag whose throttle namespace is served by another master than `{orders}` under it. */
async function prefixWithGrantorElsewhere(label: string): Promise<{ prefix: string; queuePort: number; grantorKey: string }> {
  for (let i = 0; ; i++) {
    const prefix = `${label}${i}`;
    const grantorKey = new ThrottleKeys(prefix).registryVersion;
    const queuePort = (await cluster.masterOfKey(`${prefix}:{orders}:x`)).port;
    if ((await cluster.masterOfKey(grantorKey)).port !== queuePort) return { prefix, queuePort, grantorKey };
  }
}

async function killMasterOf(key: string): Promise<number> {
  const master = await cluster.masterOfKey(key);
  await cluster.kill(master.port, 'SIGKILL');
  await waitUntil(`a master other than ${master.port} for ${key}`, async () => {
    const now = await cluster.masterOfKey(key).catch(() => undefined);
    return now && now.port !== master.port ? done(undefined) : notYet(`served by ${now?.port ?? 'nobody'}`);
  }, { timeoutMs: 30_000, intervalMs: 100 });
  await cluster.waitForStable(30_000);
  const stableAt = Date.now();
  await cluster.restart(master.port);
  return stableAt;
}

async function leasedUnderKill(label: string, keyToKill: (prefix: string, grantorKey: string) => string): Promise<void> {
  const { prefix, grantorKey } = await prefixWithGrantorElsewhere(label);
  const load = FailoverLoad.start({
    connection: { kind: 'cluster', seeds: cluster.seeds },
    queues: [
      { label: 'ThrottledWorker (leased)', kind: 'throttled', name: '{orders}', prefix, concurrency: 10, throttle: THROTTLE },
      { label: 'plain bullmq', kind: 'plain', name: '{orders}', prefix: `plain-${prefix}`, concurrency: 10 },
    ],
    ratePerSec: 40, processMs: 20, lockDurationMs: 10_000, stalledIntervalMs: 5_000, settleMs: 30_000,
  });
  loads.push(load);
  await load.ready;
  await sleep(3_000);
  const faultAt = Date.now();
  const stableAt = await killMasterOf(keyToKill(prefix, grantorKey));
  await sleep(5_000);
  const addingUntil = Date.now();
  const result = await load.finish();
  const [throttled, plain] = result.queues;
  const ours = verdict(throttled, faultAt, THROTTLE.windowMs, addingUntil);
  const theirs = verdict(plain, faultAt, THROTTLE.windowMs, addingUntil);
  process.stderr.write(`leased, ${label}: pause in job starts ThrottledWorker ${ours.gapMs} ms, plain bullmq ${theirs.gapMs} ms\n`
    + `  ${describeVerdict(ours, throttled)}\n  ${describeVerdict(theirs, plain)}\n  the load's log: ${load.logFile}\n`);
  expect(result.unhandled).toEqual([]);
  expect(result.uncaught).toEqual([]);
  expect(result.closeHung).toEqual([]);
  expect(ours.notCompleted).toEqual([]);
  expect(ours.completed + ours.lostByRedis.length).toBe(ours.added);
  expect(ours.failedAfterReturn).toEqual([]);
  expect(throttled.failed).toEqual([]);
  expect(throttled.starts.filter((s) => s.processedOn > stableAt).length).toBeGreaterThan(0);
  expect(ours.mostInWindow).toBeLessThanOrEqual(THROTTLE.max);
  expect(ours.mostStartsInWindow).toBeLessThanOrEqual(THROTTLE.max);
}

test("kill -9 of the queue's master: each job Redis keeps completes, none fails, delivery resumes", async () => {
  await leasedUnderKill('lq', (prefix) => `${prefix}:{orders}:x`);
}, 110_000);

test("kill -9 of the grantor's master: each job Redis keeps completes, none fails, delivery resumes", async () => {
  await leasedUnderKill('lg', (_prefix, grantorKey) => grantorKey);
}, 110_000);
