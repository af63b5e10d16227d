import { ThrottleAdmin, UnknownQueueError, UnknownThrottleError } from '../../src';
import { OrdersScenario, startOrdersScenario } from '../support/ordersScenario';

describe('ThrottleAdmin, against a scenario with known answers', () => {
  let scenario: OrdersScenario;
  let admin: ThrottleAdmin;
  beforeAll(async () => {
    scenario = await startOrdersScenario('admin');
    admin = scenario.admin;
  });
  afterAll(async () => {
    await scenario.close();
  });

  it('queueStats: counts, held jobs, active throttles with their declarations', async () => {
    const stats = await admin.queueStats('orders');
    expect(stats.counts.completed).toBe(8);
    expect(stats.throttled).toBe(121);
    expect(stats.heldByFullBuckets).toBe(121);
    expect(stats.throttledWorkers).toBe(2);
    expect(stats.plainWorkers).toBe(0);
    expect(stats.throttles.map((t) => [t.name, t.declaredBy, t.limits, t.key, t.missing])).toEqual([
      ['emails', 1, [{ max: 5, windowMs: 1000 }], ['Key.data("to")'], 'unthrottled'],
      ['everything', 1, [{ max: 1000, windowMs: 60_000 }], null, 'shared-bucket'],
      ['per-customer', 2, [{ max: 2, windowMs: 60_000 }], ['Key.data("customer")'], 'shared-bucket'],
    ]);
    expect(stats.oldestHeldMs).toBeGreaterThanOrEqual(0);
    expect(stats.oldestHeldMs).toBeLessThan(30_000);
  });

  it('throttleStats: 5 active buckets, 3 at their limit, 121 waiting, acme on top with 120', async () => {
    const stats = await admin.throttleStats('per-customer', { top: 10 });
    expect(stats.queues).toEqual(['orders']);
    expect(stats.declaredBy).toBe(2);
    expect(stats.activeBuckets).toBe(5);
    expect(stats.bucketsAtLimit).toBe(3);
    expect(stats.waiting).toBe(121);
    expect(stats.topBuckets).toEqual([{ key: ['acme'], waiting: 120 }, { key: ['b1'], waiting: 1 }]);
    expect(stats.lastWindow).toEqual([{ windowMs: 60_000, max: 2, delivered: 8 }]);
    expect(stats.deliveredTotal).toBe(8);
    expect(stats.limitedTotal).toBe(121);
  });

  it('throttleStats of an unkeyed throttle reports its one bucket', async () => {
    const stats = await admin.throttleStats('everything');
    expect(stats.activeBuckets).toBe(1);
    expect(stats.bucketsAtLimit).toBe(0);
    expect(stats.waiting).toBe(0);
    expect(stats.lastWindow).toEqual([{ windowMs: 60_000, max: 1000, delivered: 8 }]);
  });

  it('throttleBucket: counted deliveries, jobs waiting and when room frees up', async () => {
    const acme = await admin.throttleBucket('per-customer', ['acme']);
    expect(acme.limits).toEqual([{ windowMs: 60_000, max: 2, counted: 2, roomAt: expect.any(Number) }]);
    expect(acme.waiting).toBe(120);
    expect(acme.nextRoomAt).toBeGreaterThan(acme.at + 50_000);
    expect(acme.nextRoomAt).toBeLessThanOrEqual(acme.at + 60_000 + 300);
    const b3 = await admin.throttleBucket('per-customer', ['b3']);
    expect(b3.limits[0].counted).toBe(1);
    expect(b3.waiting).toBe(0);
    expect(b3.nextRoomAt).toBe(b3.at);
    const nobody = await admin.throttleBucket('per-customer', ['nobody']);
    expect(nobody.limits[0].counted).toBe(0);
  });

  it('unknown queues and throttles are clear errors', async () => {
    await expect(admin.queueStats('no-such-queue')).rejects.toThrow(UnknownQueueError);
    await expect(admin.throttleStats('no-such-throttle')).rejects.toThrow(UnknownThrottleError);
    await expect(admin.throttleStats('no-such-throttle')).rejects.toThrow(/not declared by any live ThrottledWorker/);
  });
});
