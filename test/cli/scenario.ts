import { Redis } from 'ioredis';
import { Key, Missing, Throttle, ThrottleAdmin } from '../../src';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * A queue 'orders' with a throttled backlog and known answers:
 * per-customer (Key.data('customer'), 2 per 1m; declared by both workers), everything (1000 per 1m, unkeyed),
 * emails (Key.data('to'), unthrottled when missing, 5 per 1s). 122 jobs of acme, 3 of b1, 2 of b2, 1 of b3,
 * 3 of the number 7: 9 delivered (2 + 2 + 2 + 1 + 2), 122 held on full buckets (acme 120, b1 1, 7 1);
 * 5 active buckets, 4 at their limit.
 */
export interface CliScenario {
  redis: Redis;
  bed: WorkerTestBed;
  admin: ThrottleAdmin;
  prefix: string;
  close(): Promise<void>;
}

export const DELIVERED = 9;
export const HELD = 122;

export async function startScenario(label: string): Promise<CliScenario> {
  const redis = newRedis();
  const bed = new WorkerTestBed(label);
  const admin = new ThrottleAdmin({ connection: redis, prefix: bed.prefix });
  const queue = bed.queue('orders');
  const perCustomer = Throttle.named('per-customer').key([Key.data('customer')]).limit(2, '1m');
  const everything = Throttle.named('everything').limit(1000, '1m');
  const emails = Throttle.named('emails').key([Key.data('to')]).whenKeyMissing(Missing.Unthrottled).limit(5, '1s');
  let delivered = 0;
  bed.worker('orders', async () => { delivered++; }, { concurrency: 4, throttles: [perCustomer, everything] });
  bed.worker('orders', null, { throttles: [perCustomer, emails] });
  await queue.addBulk([
    ...Array.from({ length: 122 }, () => ({ name: 'charge', data: { customer: 'acme' } })),
    ...Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 'b1' } })),
    ...Array.from({ length: 2 }, () => ({ name: 'charge', data: { customer: 'b2' } })),
    { name: 'charge', data: { customer: 'b3' } },
    ...Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 7 } })),
  ]);
  await waitFor(() => delivered === DELIVERED, 15_000, `${DELIVERED} deliveries`);
  await waitFor(async () => (await admin.queueStats('orders')).heldByFullBuckets === HELD, 15_000, 'the backlog to be held');
  return {
    redis, bed, admin, prefix: bed.prefix,
    async close() {
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    },
  };
}
