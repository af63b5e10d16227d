import { Queue } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import { QueueStillThrottledError, ThrottleAdmin, UnknownQueueError, UnknownThrottleError } from '../../src';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { waitFor } from '../support/bullmq';
import {
  ClusterOpsScenario, crash, DELIVERED, EXACT_QUEUES, HELD, LEASED_QUEUES, PLAIN_WORKER_QUEUE, SHARED_NAMESPACE, SHARED_QUEUE,
  startClusterOpsScenario, STRIPE, STRIPE_QUEUES,
} from '../support/clusterOpsScenario';

// ThrottleAdmin on an ioredis Cluster, over queues in several slots on every master (see clusterOpsScenario).
let s: ClusterOpsScenario;

beforeAll(async () => { s = await startClusterOpsScenario({ declarationTtlMs: 1500 }); }, 120_000);
afterAll(async () => { await s?.close(); });

const keys = new ThrottleKeys('bull');

test('the scenario spreads over slots and masters as it says', async () => {
  const namespaceSlot = calculateSlot(keys.registryAlive);
  const slotOf = (queue: string) => calculateSlot(keys.queueBase(queue));
  expect(EXACT_QUEUES.map(slotOf)).toEqual([namespaceSlot, namespaceSlot]);
  const masterOf = async (slot: number) => (await s.cluster.masterOfSlot(slot)).port;
  const ports = await Promise.all([namespaceSlot, ...LEASED_QUEUES.map(slotOf), slotOf(PLAIN_WORKER_QUEUE)].map(masterOf));
  // '{refunds}' is on the namespace's master (another slot); '{invoices}' and '{orders}' are on the two others.
  expect(ports[1]).toBe(ports[0]);
  expect(new Set([ports[0], ports[2], ports[3]]).size).toBe(3);
});

test('queueStats of every queue: counts, held jobs and the throttle, read from the queue\'s own node', async () => {
  for (const queue of [...EXACT_QUEUES, ...LEASED_QUEUES]) {
    const stats = await s.admin.queueStats(queue);
    expect([queue, stats.counts.completed]).toEqual([queue, DELIVERED[queue]]);
    expect(stats).toMatchObject({ queue, throttled: HELD[queue], heldByFullBuckets: HELD[queue], classifying: 0, throttledWorkers: 1, plainWorkers: 0 });
    expect(stats.throttles.map((t) => [t.name, t.declaredBy, t.limits])).toEqual([['stripe', 1, [{ max: 2, windowMs: 60_000 }]]]);
    expect(stats.oldestHeldMs).toBeGreaterThanOrEqual(0);
    expect(stats.oldestHeldMs).toBeLessThan(60_000);
  }
});

test('plain-worker detection asks the master where the queue\'s workers are connected', async () => {
  const orders = await s.admin.queueStats(PLAIN_WORKER_QUEUE);
  expect(orders).toMatchObject({ throttled: 0, heldByFullBuckets: 0, throttledWorkers: 1, plainWorkers: 1, oldestHeldMs: null });
  expect(Object.values(orders.counts).reduce((a, b) => a + b, 0)).toBe(0);
  // Every time, not by luck: a keyless CLIENT LIST would go to any one master, and only '{orders}''s sees both workers.
  for (let i = 0; i < 10; i++) expect((await s.admin.queueStats(PLAIN_WORKER_QUEUE)).plainWorkers).toBe(1);
});

test('throttleStats adds up what each queue keeps of the throttle, over every slot and master', async () => {
  const stats = await s.admin.throttleStats('stripe', { top: 5 });
  expect(stats.queues).toEqual([...STRIPE_QUEUES].sort());
  expect(stats.declaredBy).toBe(STRIPE_QUEUES.length);
  expect(stats).toMatchObject({ activeBuckets: STRIPE.activeBuckets, bucketsAtLimit: STRIPE.bucketsAtLimit, waiting: STRIPE.waiting, deliveredTotal: STRIPE.delivered });
  expect(stats.limitedTotal).toBeGreaterThanOrEqual(STRIPE.waiting);
  expect(stats.tokensExpired).toBeGreaterThanOrEqual(0);
  // acme's 8 are held on '{bull}orders' (2), '{bull}refunds' (4) and '{invoices}' (2, another master).
  expect(stats.topBuckets).toEqual([{ key: ['acme'], waiting: STRIPE.acmeWaiting }, { key: ['c2'], waiting: 1 }]);
  // Each queue's deliveries, by its own node's clock.
  expect(stats.lastWindow).toEqual([{ windowMs: 60_000, max: 2, delivered: STRIPE.delivered }]);
});

test('throttleBucket: counted in the namespace slot, waiting over every queue', async () => {
  const acme = await s.admin.throttleBucket('stripe', ['acme']);
  expect(acme.limits).toEqual([{ windowMs: 60_000, max: 2, counted: 2, roomAt: expect.any(Number) }]);
  expect(acme.waiting).toBe(STRIPE.acmeWaiting);
  expect(acme.nextRoomAt).toBeGreaterThan(acme.at);
  const c2 = await s.admin.throttleBucket('stripe', ['c2']);
  expect(c2).toMatchObject({ waiting: 1, limits: [{ counted: 2 }] });
  const c3 = await s.admin.throttleBucket('stripe', ['c3']);
  expect(c3).toMatchObject({ waiting: 0, limits: [{ counted: 1, roomAt: null }] });
  expect(c3.nextRoomAt).toBe(c3.at);
});

test('throttlePrefix: a namespace in its own slot is read from there, and only there', async () => {
  await expect(s.admin.throttleStats('partner')).rejects.toThrow(UnknownThrottleError);
  const shared = new ThrottleAdmin({ connection: s.client, throttlePrefix: SHARED_NAMESPACE });
  try {
    const stats = await shared.throttleStats('partner');
    expect(stats).toMatchObject({ queues: [SHARED_QUEUE], waiting: 2, deliveredTotal: 1, activeBuckets: 1, bucketsAtLimit: 1 });
    expect(stats.lastWindow).toEqual([{ windowMs: 60_000, max: 1, delivered: 1 }]);
    expect((await shared.throttleBucket('partner')).limits[0].counted).toBe(1);
    await expect(shared.throttleStats('partner-x')).rejects.toThrow(/in throttle namespace '\{shared\}': check the name and --throttle-prefix/);
  } finally {
    await shared.close();
  }
});

test('an unknown queue is a clear error (its keys are in three slots: asked one by one)', async () => {
  await expect(s.admin.queueStats('no-such-queue')).rejects.toThrow(UnknownQueueError);
});

test('releaseHeld: refused while a queue has a live worker; puts its jobs back, on its own node, once they are all gone', async () => {
  await expect(s.admin.releaseHeld('{invoices}')).rejects.toThrow(QueueStillThrottledError);
  await expect(s.admin.releaseHeld('{bull}refunds')).rejects.toThrow(QueueStillThrottledError);
  // Every worker of the namespace crashes (a live one would release a lapsed queue's jobs on its heartbeat).
  for (const queue of STRIPE_QUEUES) await crash(s.workers.get(queue)!);
  await waitFor(async () => (await s.admin.liveEntries()).length === 0, 10_000, 'the crashed workers to lapse');
  for (const queue of STRIPE_QUEUES) {
    // The queue's own workers set lapses on its node's clock, a moment after the registry.
    let released = -1;
    await waitFor(async () => {
      released = await s.admin.releaseHeld(queue).catch((error: unknown) => {
        if (error instanceof QueueStillThrottledError) return -1;
        throw error;
      });
      return released >= 0;
    }, 10_000, `the release of ${queue} to be allowed`);
    expect([queue, released]).toEqual([queue, HELD[queue]]);
    const bull = new Queue(queue, { connection: s.client });
    try {
      expect([queue, await bull.getJobCounts('wait', 'completed')]).toEqual([queue, { wait: HELD[queue], completed: DELIVERED[queue] }]);
    } finally {
      await bull.close();
    }
    expect((await s.admin.queueStats(queue)).throttled).toBe(0);
  }
});
