import { Job, Queue } from 'bullmq';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottleAdmin } from '../../src';
import { createDashboardHandler, DashboardHandler, DashboardOptions } from '../../src/dashboard/server/dashboardHandler';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

/**
 * A live scenario with known answers: throttle 'per-customer', 2 per 10 min per customer (long enough that
 * nothing frees up while a test runs), on queue 'orders'. acme has 122 jobs, beta 4, gamma 3, delta 1,
 * epsilon 1: 8 are delivered (2 + 2 + 2 + 1 + 1), so 5 buckets are active and 3 are at their limit, and
 * 123 jobs wait, 120 of them on acme.
 */
export const THROTTLE = 'per-customer';
export const QUEUE = 'orders';
export const JOBS_PER_CUSTOMER: Record<string, number> = { acme: 122, beta: 4, gamma: 3, delta: 1, epsilon: 1 };
export const EXPECTED = { delivered: 8, activeBuckets: 5, bucketsAtLimit: 3, waiting: 123, acmeWaiting: 120 };

export interface Delivery {
  id: string;
  customer: string;
}

export interface Scenario {
  redis: Redis;
  bed: WorkerTestBed;
  queue: Queue;
  admin: ThrottleAdmin;
  delivered: Delivery[];
  /** Job ids by customer, in the order added. */
  jobIds: Record<string, string[]>;
  close(): Promise<void>;
}

export async function startScenario(label: string, customers: Record<string, number> = JOBS_PER_CUSTOMER): Promise<Scenario> {
  const redis = newRedis();
  const bed = new WorkerTestBed(label);
  const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
  const delivered: Delivery[] = [];
  const queue = bed.queue(QUEUE);
  const throttle = Throttle.named(THROTTLE).key([Key.data('customer')]).limit(2, '10m');
  // Counted at processedOn (leaseMs 0), as test/support/ordersScenario.ts says why: a start put back on a busy
  // machine changed which of acme's jobs was delivered and which waits first (seen on bullmq 5.67.0 in CI).
  bed.worker(QUEUE, async (job: Job<{ customer: string }>) => { delivered.push({ id: job.id!, customer: job.data.customer }); }, { concurrency: 4, leaseMs: 0, throttles: [throttle] });
  const names = Object.entries(customers).flatMap(([customer, n]) => Array.from({ length: n }, () => customer));
  const jobs = await queue.addBulk(names.map((customer) => ({ name: 'call', data: { customer } })));
  const jobIds: Record<string, string[]> = {};
  jobs.forEach((job, i) => (jobIds[names[i]] ??= []).push(job.id!));
  const deliverable = Object.values(customers).reduce((sum, n) => sum + Math.min(2, n), 0);
  const waiting = Object.values(customers).reduce((sum, n) => sum + Math.max(0, n - 2), 0);
  await waitFor(() => delivered.length === deliverable, 20_000, `${deliverable} deliveries`);
  await waitFor(async () => (await admin.throttleStats(THROTTLE)).waiting === waiting, 20_000, `${waiting} jobs waiting`);
  return {
    redis, bed, queue, admin, delivered, jobIds,
    async close() {
      await admin.close();
      await bed.close(redis);
      await redis.quit();
    },
  };
}

export interface DashboardServer {
  url: string;
  handler: DashboardHandler;
  close(): Promise<void>;
}

/** The dashboard on node:http at a free loopback port. */
export async function startDashboard(options: Omit<DashboardOptions, 'connection'> & { prefix: string }): Promise<DashboardServer> {
  const handler = createDashboardHandler({ connection: testRedisUrl(), ...options });
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    handler,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export async function getJson<T = any>(url: string): Promise<{ status: number; body: T }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as T };
}

export async function postJson<T = any>(url: string, body: unknown, contentType = 'application/json'): Promise<{ status: number; body: T }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as T };
}
