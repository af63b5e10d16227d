import calculateSlot from 'cluster-key-slot';
import { freeLoopbackPort } from '../../src/devRedis/localRedisServer';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { waitFor } from '../support/bullmq';
import { ClusterOpsScenario, crash, HELD, PLAIN_WORKER_QUEUE, SHARED_NAMESPACE, startClusterOpsScenario, STRIPE, STRIPE_QUEUES } from '../support/clusterOpsScenario';
import { cli, Run } from '../support/runCli';
import { testRedisUrl } from '../support/testRedis';

// The CLI, run as a process, against a Redis Cluster (see clusterOpsScenario).
let s: ClusterOpsScenario;
/** A master that does not hold the namespace's slot: a plain client there would be answered MOVED. */
let elsewhere: string;
let seeds: string[];

beforeAll(async () => {
  s = await startClusterOpsScenario({ declarationTtlMs: 1500 });
  const namespaceMaster = (await s.cluster.masterOfSlot(calculateSlot(new ThrottleKeys('bull').registryAlive))).port;
  const other = (await s.cluster.nodes()).find((n) => n.role === 'master' && n.slots.length > 0 && n.port !== namespaceMaster)!;
  elsewhere = `redis://127.0.0.1:${other.port}`;
  seeds = s.cluster.seeds.slice(0, 3).flatMap((seed) => ['--redis', `redis://${seed.host}:${seed.port}`]);
}, 120_000);
afterAll(async () => { await s?.close(); });

function expectOk(run: Run): void {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
}

function expectOneErrorLine(run: Run, pattern: RegExp): void {
  expect(run.code).toBe(1);
  const lines = run.stderr.split('\n').filter((l) => l.length > 0);
  expect(lines).toEqual([expect.stringMatching(/^bullmq-throttle: /)]);
  expect(lines[0]).toMatch(pattern);
  expect(run.stdout).toBe('');
}

test('one --redis naming a node that does not hold the keys: the cluster is found out, no MOVED', async () => {
  const run = await cli(['stats', '{bull}refunds', '--redis', elsewhere]);
  expectOk(run);
  expect(run.stdout).toContain(`${HELD['{bull}refunds']} jobs held: ${HELD['{bull}refunds']} on full buckets`);
  expect(run.stdout).toMatch(/^stripe +2 per 1m +Key\.data\("customer"\) +shared bucket +1 worker +-$/m);
});

test('several --redis seeds, and --cluster with one, connect as a Cluster client', async () => {
  const several = await cli(['--json', 'stats', PLAIN_WORKER_QUEUE, ...seeds]);
  expectOk(several);
  expect(JSON.parse(several.stdout)).toMatchObject({ queue: PLAIN_WORKER_QUEUE, throttledWorkers: 1, plainWorkers: 1 });
  const flagged = await cli(['stats', PLAIN_WORKER_QUEUE, '--cluster', '--redis', elsewhere]);
  expectOk(flagged);
  expect(flagged.stdout).toContain('1 ThrottledWorker, 1 plain Worker (they bypass the throttles)');
  const commaSeparated = await cli(['--json', 'stats', '{invoices}'], { env: { REDIS_URL: seeds.filter((a) => a !== '--redis').join(',') } });
  expectOk(commaSeparated);
  expect(JSON.parse(commaSeparated.stdout)).toMatchObject({ queue: '{invoices}', throttled: HELD['{invoices}'] });
});

test('throttle and bucket add up the queues of every slot', async () => {
  const throttle = await cli(['throttle', 'stripe', '--redis', elsewhere]);
  expectOk(throttle);
  expect(throttle.stdout).toContain([...STRIPE_QUEUES].sort().join(', '));
  expect(throttle.stdout).toContain(`${STRIPE.waiting} jobs held on full buckets`);
  expect(throttle.stdout).toMatch(new RegExp(`^ {2}acme +${STRIPE.acmeWaiting}$`, 'm'));
  const bucket = await cli(['bucket', 'stripe', 'acme', '--json', ...seeds]);
  expectOk(bucket);
  expect(JSON.parse(bucket.stdout)).toMatchObject({ key: ['acme'], waiting: STRIPE.acmeWaiting, limits: [{ counted: 2, max: 2 }] });
});

test('--throttle-prefix reads another namespace, on its own slot', async () => {
  const run = await cli(['throttle', 'partner', '--throttle-prefix', SHARED_NAMESPACE, '--json', '--redis', elsewhere]);
  expectOk(run);
  expect(JSON.parse(run.stdout)).toMatchObject({ name: 'partner', queues: ['{shared}jobs'], waiting: 2, deliveredTotal: 1 });
  expectOneErrorLine(await cli(['throttle', 'partner', '--redis', elsewhere]), /throttle 'partner' is not declared by any live ThrottledWorker under prefix 'bull'.*--throttle-prefix/);
});

test('watch --json refreshes from the cluster until SIGINT', async () => {
  const run = await cli(['watch', '{bull}orders', '--json', '--interval', '300', '--redis', elsewhere], {
    whileRunning: async (child, out) => {
      const deadline = Date.now() + 20_000;
      while (out().split('\n').filter(Boolean).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      child.kill('SIGINT');
    },
  });
  expectOk(run);
  const lines = run.stdout.split('\n').filter(Boolean);
  expect(lines.length).toBeGreaterThanOrEqual(2);
  for (const line of lines) {
    const snapshot = JSON.parse(line);
    expect(snapshot.queue.throttled).toBe(HELD['{bull}orders']);
    expect(snapshot.throttles.map((t: { name: string; waiting: number }) => [t.name, t.waiting])).toEqual([['stripe', STRIPE.waiting]]);
  }
});

test('--cluster against a Redis that is not a cluster node, and a cluster that cannot be reached: one line each', async () => {
  expectOneErrorLine(await cli(['stats', 'orders', '--cluster', '--redis', testRedisUrl()]), /is not a Redis Cluster node \(cluster support disabled\): run without --cluster/);
  const port = await freeLoopbackPort();
  expectOneErrorLine(await cli(['stats', 'orders', '--cluster', '--redis', `redis://127.0.0.1:${port}`]), new RegExp(`cannot reach the Redis Cluster at redis://127\\.0\\.0\\.1:${port}`));
});

test('release: refused while the queue has a live worker; done once the namespace\'s workers are gone', async () => {
  expectOneErrorLine(await cli(['release', '{bull}orders', '--redis', elsewhere]), /queue '\{bull\}orders' has 1 live ThrottledWorker/);
  // Every worker of the namespace crashes (a live one would release a lapsed queue's jobs on its heartbeat).
  for (const queue of STRIPE_QUEUES) await crash(s.workers.get(queue)!);
  await waitFor(async () => (await s.admin.liveEntries()).length === 0, 10_000, 'the crashed workers to lapse');
  let run: Run | undefined;
  await waitFor(async () => {
    run = await cli(['release', '{bull}orders', '--json', ...seeds]);
    // The queue's own workers set lapses on its node's clock, a moment after the registry.
    return run.code === 0;
  }, 15_000, 'the release to be allowed');
  expect(JSON.parse(run!.stdout)).toEqual({ queue: '{bull}orders', released: HELD['{bull}orders'] });
});
