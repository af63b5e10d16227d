import { Queue } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import { QueueStillThrottledError, ThrottleAdmin, UnknownQueueError, UnknownThrottleError } from '../../src';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { waitFor } from '../support/bullmq';
import {
  ClusterOpsScenario, crash, DELIVERED, EXACT_QUEUES, HELD, OTHER_SLOT_QUEUES, SHARED_NAMESPACE, SHARED_QUEUE, startClusterOpsScenario,
} from '../support/clusterOpsScenario';

// ThrottleAdmin on an ioredis Cluster, over queues in several slots on several masters (see clusterOpsScenario).
const TTL_MS = 1500;
let s: ClusterOpsScenario;

beforeAll(async () => { s = await startClusterOpsScenario({ declarationTtlMs: TTL_MS }); }, 120_000);
afterAll(async () => { await s?.close(); });

test('the scenario spreads over slots and masters as it says', async () => {
  const namespaceSlot = calculateSlot(new ThrottleKeys('bull').registryAlive);
  expect(EXACT_QUEUES.map((q) => calculateSlot(new ThrottleKeys('bull').queueBase(q)))).toEqual([namespaceSlot, namespaceSlot]);
  const otherSlots = OTHER_SLOT_QUEUES.map((q) => calculateSlot(new ThrottleKeys('bull').queueBase(q)));
  expect(otherSlots).not.toContain(namespaceSlot);
  const masterPorts = await Promise.all([namespaceSlot, ...otherSlots].map(async (slot) => (await s.cluster.masterOfSlot(slot)).port));
  // '{orders}' is on another master than the namespace: node-local reads (CLIENT LIST, TIME) must go there.
  expect(masterPorts[1]).not.toBe(masterPorts[0]);
});

test('queueStats of the exact-layout queues: counts, held jobs and their throttle', async () => {
  for (const queue of EXACT_QUEUES) {
    const stats = await s.admin.queueStats(queue);
    expect(stats.counts.completed).toBe(DELIVERED[queue]);
    expect(stats).toMatchObject({ queue, throttled: HELD[queue], heldByFullBuckets: HELD[queue], classifying: 0, throttledWorkers: 1, plainWorkers: 0 });
    expect(stats.throttles.map((t) => [t.name, t.declaredBy, t.limits])).toEqual([['stripe', 1, [{ max: 2, windowMs: 60_000 }]]]);
    expect(stats.oldestHeldMs).toBeGreaterThanOrEqual(0);
    expect(stats.oldestHeldMs).toBeLessThan(60_000);
  }
});

test('queueStats of queues on other slots and masters: their workers, and the plain Worker where it is connected', async () => {
  const orders = await s.admin.queueStats('{orders}');
  expect(orders).toMatchObject({ throttled: 0, heldByFullBuckets: 0, throttledWorkers: 1, plainWorkers: 1, oldestHeldMs: null });
  // Every time, not by luck: a keyless CLIENT LIST would go to any one master, and only '{orders}''s sees both workers.
  for (let i = 0; i < 10; i++) expect((await s.admin.queueStats('{orders}')).plainWorkers).toBe(1);
  expect(Object.values(orders.counts).reduce((a, b) => a + b, 0)).toBe(0);
  expect(orders.throttles.map((t) => t.name)).toEqual(['stripe']);
  expect(await s.admin.queueStats('{refunds}')).toMatchObject({ throttledWorkers: 1, plainWorkers: 0 });
});

test('throttleStats adds up what each queue keeps of the throttle, over every slot that declares it', async () => {
  const stats = await s.admin.throttleStats('stripe', { top: 5 });
  expect(stats.queues).toEqual([...EXACT_QUEUES, ...OTHER_SLOT_QUEUES].sort());
  expect(stats.declaredBy).toBe(4);
  expect(stats).toMatchObject({ activeBuckets: 3, bucketsAtLimit: 1, waiting: 6, deliveredTotal: 4, limitedTotal: 6 });
  // acme's 6 are 2 held on '{bull}orders' and 4 on '{bull}refunds': two queues' statistics, added up.
  expect(stats.topBuckets).toEqual([{ key: ['acme'], waiting: 6 }]);
  expect(stats.lastWindow).toEqual([{ windowMs: 60_000, max: 2, delivered: 4 }]);
});

test('throttleBucket: counted in the namespace slot, waiting over every queue', async () => {
  const acme = await s.admin.throttleBucket('stripe', ['acme']);
  expect(acme.limits).toEqual([{ windowMs: 60_000, max: 2, counted: 2, roomAt: expect.any(Number) }]);
  expect(acme.waiting).toBe(6);
  expect(acme.nextRoomAt).toBeGreaterThan(acme.at);
  const b2 = await s.admin.throttleBucket('stripe', ['b2']);
  expect(b2.limits[0].counted).toBe(1);
  expect(b2.nextRoomAt).toBe(b2.at);
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

test('releaseHeld: refused while a queue (here on another master) has a live worker; puts jobs back once they are all gone', async () => {
  await expect(s.admin.releaseHeld('{orders}')).rejects.toThrow(QueueStillThrottledError);
  await expect(s.admin.releaseHeld('{bull}refunds')).rejects.toThrow(QueueStillThrottledError);
  // Every worker of the namespace crashes (a live one would release a lapsed queue's jobs on its heartbeat).
  for (const queue of [...EXACT_QUEUES, ...OTHER_SLOT_QUEUES]) await crash(s.workers.get(queue)!);
  await waitFor(async () => (await s.admin.liveEntries()).length === 0, 10_000, 'the crashed workers to lapse');
  for (const queue of [...EXACT_QUEUES, ...OTHER_SLOT_QUEUES]) {
    const held = queue in HELD ? HELD[queue as keyof typeof HELD] : 0;
    // The queue's own workers set lapses on its node's clock, a moment after the registry.
    let released = -1;
    await waitFor(async () => {
      released = await s.admin.releaseHeld(queue).catch((error: unknown) => {
        if (error instanceof QueueStillThrottledError) return -1;
        throw error;
      });
      return released >= 0;
    }, 10_000, `the release of ${queue} to be allowed`);
    expect([queue, released]).toEqual([queue, held]);
    const bull = new Queue(queue, { connection: s.client });
    try {
      expect(await bull.getJobCounts('wait', 'completed')).toEqual({ wait: held, completed: queue in DELIVERED ? DELIVERED[queue as keyof typeof DELIVERED] : 0 });
    } finally {
      await bull.close();
    }
    expect((await s.admin.queueStats(queue)).throttled).toBe(0);
  }
});
