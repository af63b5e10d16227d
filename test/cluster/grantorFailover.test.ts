import { Job, Queue } from 'bullmq';
import { mostInAnyWindow, Throttle, ThrottleAdmin, ThrottledWorker, ThrottleKeys } from '../../src';
import { useRedisCluster } from '../support/clusterSuite';
import { waitFor } from '../support/bullmq';
import { nowMs } from '../support/processorStart';

// kill -9 of the master that holds a namespace's grantor while queues on other masters deliver at their
// limit: the promoted replica may lack the last grants, so it grants nothing until every token of its
// predecessor is spent or expired and the queues have told it what they delivered (rules 3 and 4).
const suite = useRedisCluster();

/** Queue names whose slots are served by masters other than `avoid`'s. */
async function queuesAwayFrom(keys: ThrottleKeys, avoidPort: number, count: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; names.length < count && i < 200; i++) {
    const name = `{q${i}}`;
    if ((await suite.cluster.masterOfKey(keys.queue(name).state)).port !== avoidPort) names.push(name);
  }
  return names;
}

test('kill -9 of the grantor\'s master under saturation: never more than N in any W, each job once, delivery resumes', async () => {
  const prefix = 'gf';
  const keys = new ThrottleKeys(prefix);
  const grantorPort = (await suite.cluster.masterOfKey(keys.registryVersion)).port;
  const queues = await queuesAwayFrom(keys, grantorPort, 2);
  const N = 20;
  const W = 2_000;
  const throttle = Throttle.named('api').limit(N, `${W}ms`);
  const starts: { at: number; started: number; id: string }[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
  process.on('unhandledRejection', onUnhandled);
  const closers: (() => Promise<unknown>)[] = [];
  try {
    for (const name of queues) {
      const queue = new Queue(name, { connection: suite.client, prefix });
      queue.on('error', () => undefined);
      closers.push(() => queue.close());
      await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'call', data: { i } })));
      const worker = new ThrottledWorker(name, async (job: Job) => { starts.push({ at: job.processedOn!, started: nowMs(), id: `${name}/${job.id}` }); }, {
        connection: suite.client, prefix, concurrency: 5, throttles: [throttle],
      });
      worker.on('error', () => undefined);
      closers.push(() => worker.close());
    }
    await waitFor(() => starts.length >= N + 5, 20_000, 'saturation');
    const killedAt = Date.now();
    await suite.cluster.kill(grantorPort, 'SIGKILL');
    await waitFor(() => starts.length === 120, 90_000, 'every job delivered after the failover');
    const after = starts.filter((s) => s.at > killedAt).map((s) => s.at).sort((a, b) => a - b);
    process.stderr.write(`grantor failover: first delivery ${after[0] - killedAt} ms after the kill; most in any ${W} ms: ${mostInAnyWindow(starts.map((s) => s.at), W)} (processedOn), ${mostInAnyWindow(starts.map((s) => s.started), W)} (processor starts)\n`);
    expect(new Set(starts.map((s) => s.id)).size).toBe(120);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.started), W)).toBeLessThanOrEqual(N);
    expect(unhandled).toEqual([]);
    const admin = new ThrottleAdmin({ connection: suite.client, prefix });
    try {
      expect((await admin.throttleStats('api')).recoveryHold).toBeNull();
    } finally {
      await admin.close();
    }
  } finally {
    process.off('unhandledRejection', onUnhandled);
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await suite.cluster.restart(grantorPort).catch(() => undefined);
  }
}, 150_000);
