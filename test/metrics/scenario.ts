import { Redis } from 'ioredis';
import { Key, Missing, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * The scenario of test/admin/throttleAdmin.test.ts, with known answers: on 'orders', per-customer (2 / 1m,
 * keyed by customer) holds 121 of 129 jobs (120 of acme's 122, one of b1's 3), 8 delivered; plus a queue
 * 'reports' whose one worker declares 'reports-only' (10 / 1s) and has no jobs.
 */
export interface MetricsScenario {
  redis: Redis;
  bed: WorkerTestBed;
  admin: ThrottleAdmin;
  reportsWorker: ThrottledWorker;
  close(): Promise<void>;
}

export async function startScenario(label: string): Promise<MetricsScenario> {
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
  const reportsWorker = bed.worker('reports', async () => undefined, { throttles: [Throttle.named('reports-only').limit(10, '1s')] });
  await reportsWorker.waitUntilReady();
  const jobs = [
    ...Array.from({ length: 122 }, () => ({ name: 'charge', data: { customer: 'acme' } })),
    ...Array.from({ length: 3 }, () => ({ name: 'charge', data: { customer: 'b1' } })),
    ...Array.from({ length: 2 }, () => ({ name: 'charge', data: { customer: 'b2' } })),
    { name: 'charge', data: { customer: 'b3' } },
    { name: 'charge', data: { customer: 'b4' } },
  ];
  await queue.addBulk(jobs);
  await waitFor(() => delivered === 8, 15_000, 'eight deliveries');
  await waitFor(async () => (await admin.queueStats('orders')).heldByFullBuckets === 121, 15_000, 'the backlog to be held');
  await waitFor(async () => (await admin.live()).queues.includes('reports'), 15_000, 'the reports worker to declare');
  return {
    redis,
    bed,
    admin,
    reportsWorker,
    async close() {
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    },
  };
}

/** The value of one series in the text exposition format, or undefined when the series is absent. */
export function seriesValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every series line (not HELP/TYPE) of the text. */
export function seriesLines(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0 && !l.startsWith('#'));
}
