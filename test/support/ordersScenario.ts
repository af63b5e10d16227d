import { Redis } from 'ioredis';
import { Key, Missing, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { newRedis } from './redis';
import { waitFor, WorkerTestBed } from './bullmq';

/**
 * The stats scenario with known answers: on queue 'orders', per-customer (Key.data('customer'), 2 per 1m;
 * declared by both of its workers), everything (1000 per 1m, unkeyed) and emails (Key.data('to'), unthrottled
 * when missing, 5 per 1s). 122 jobs of acme, 3 of b1, 2 of b2, 1 of b3, then `tail`: with the default tail
 * (one job of b4) 8 are delivered and 121 held (acme 120, b1 1) on 5 active buckets, 3 at their limit.
 */
export interface OrdersScenario {
  redis: Redis;
  bed: WorkerTestBed;
  admin: ThrottleAdmin;
  prefix: string;
  /** Set with `reports`: the one worker of queue 'reports', declaring 'reports-only' (10 per 1s), no jobs. */
  reportsWorker?: ThrottledWorker;
  close(): Promise<void>;
}

export interface OrdersScenarioOptions {
  tail?: { name: string; data: Record<string, unknown> }[];
  delivered?: number;
  held?: number;
  reports?: boolean;
  /** per-customer's window ('1m' unless given): a file whose tests outlast a minute would see its buckets refill. */
  perCustomerWindow?: '1m' | '1h';
}

export async function startOrdersScenario(label: string, options: OrdersScenarioOptions = {}): Promise<OrdersScenario> {
  const { tail = [{ name: 'charge', data: { customer: 'b4' } }], delivered: expectDelivered = 8, held = 121 } = options;
  const redis = newRedis();
  const bed = new WorkerTestBed(label);
  const admin = new ThrottleAdmin({ connection: redis, prefix: bed.prefix });
  const queue = bed.queue('orders');
  const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(2, options.perCustomerWindow ?? '1m');
  const everything = Throttle.named('everything').limit(1000, '1m');
  const emails = Throttle.named('emails').key([Key.data('to')]).whenKeyMissing(Missing.Unthrottled).limit(5, '1s');
  let delivered = 0;
  // Counted at processedOn (leaseMs 0): with a start deadline, a start that comes late on a busy machine puts its job
  // back, to wait again on its full bucket, so that the known answers (121 jobs that waited) would depend on the load.
  bed.worker('orders', async () => { delivered++; }, { concurrency: 4, leaseMs: 0, throttles: [perCustomer, everything] });
  bed.worker('orders', null, { leaseMs: 0, throttles: [perCustomer, emails] });
  let reportsWorker: ThrottledWorker | undefined;
  if (options.reports) {
    reportsWorker = bed.worker('reports', async () => undefined, { throttles: [Throttle.named('reports-only').limit(10, '1s')] });
    await reportsWorker.waitUntilReady();
  }
  await queue.addBulk([
    ...Array.from({ length: 122 }, () => ({ name: 'charge', data: { customer: 'acme' } })),
    ...Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 'b1' } })),
    ...Array.from({ length: 2 }, () => ({ name: 'charge', data: { customer: 'b2' } })),
    { name: 'charge', data: { customer: 'b3' } },
    ...tail,
  ]);
  await waitFor(() => delivered === expectDelivered, 15_000, `${expectDelivered} deliveries`);
  await waitFor(async () => (await admin.queueStats('orders')).heldByFullBuckets === held, 15_000, 'the backlog to be held');
  if (options.reports) await waitFor(async () => (await admin.live()).queues.includes('reports'), 15_000, 'the reports worker to declare');
  return {
    redis, bed, admin, prefix: bed.prefix, reportsWorker,
    async close() {
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    },
  };
}
