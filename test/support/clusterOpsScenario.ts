import { Queue, Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import pino from 'pino';
import { Key, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { waitFor } from './bullmq';
export { crash } from './crashWorker';
import { newClusterClient } from './clusterClient';
import { RedisCluster, startRedisCluster } from './redisCluster';

/**
 * A 3-master, 3-replica cluster and the default prefix 'bull', with the throttle 'stripe' (Key.data('customer'),
 * 2 per 1m) declared by a ThrottledWorker on each of five queues in four slots on the three masters:
 * - '{bull}orders' and '{bull}refunds' hash with the namespace ('bull::throttle:{bull}', slot 9263): exact
 *   delivery, one slot. orders gets 4 jobs of acme and 1 of b1 (3 delivered: acme 2, b1; 2 held), then refunds
 *   4 of acme and 1 of b2 (1 delivered: b2; 4 held, acme being full).
 * - '{refunds}' (slot 7042, on the namespace's master) and '{invoices}' (slot 13262, a third master) lease their
 *   tokens: refunds gets 3 jobs of c2 (2 delivered, 1 held), then invoices 2 of acme and 1 of c3 (c3 delivered,
 *   2 held on acme).
 * - '{orders}' (slot 105, the remaining master) gets no jobs; it also has a plain bullmq Worker, which bypasses
 *   the throttles (and would take some of its jobs).
 * So 7 delivered and 9 held: 8 on acme (over three queues on two masters), 1 on c2.
 * - '{shared}jobs' declares 'partner' (1 per 1m, unkeyed) under throttlePrefix '{shared}' (its own slot, which
 *   the queue's tag shares): 3 jobs, 1 delivered, 2 held.
 */
export const EXACT_QUEUES = ['{bull}orders', '{bull}refunds'] as const;
export const LEASED_QUEUES = ['{refunds}', '{invoices}'] as const;
export const PLAIN_WORKER_QUEUE = '{orders}';
/** Every queue declaring 'stripe'. */
export const STRIPE_QUEUES: readonly string[] = [...EXACT_QUEUES, ...LEASED_QUEUES, PLAIN_WORKER_QUEUE];
export const SHARED_QUEUE = '{shared}jobs';
export const SHARED_NAMESPACE = '{shared}';
export const DELIVERED: Readonly<Record<string, number>> = { '{bull}orders': 3, '{bull}refunds': 1, '{refunds}': 2, '{invoices}': 1, '{orders}': 0 };
export const HELD: Readonly<Record<string, number>> = { '{bull}orders': 2, '{bull}refunds': 4, '{refunds}': 1, '{invoices}': 2, '{orders}': 0 };
/** 'stripe' over every queue. */
export const STRIPE = { delivered: 7, waiting: 9, acmeWaiting: 8, activeBuckets: 5, bucketsAtLimit: 2 } as const;

export interface ClusterOpsScenario {
  cluster: RedisCluster;
  client: Cluster;
  admin: ThrottleAdmin;
  workers: Map<string, ThrottledWorker>;
  /** Queue -> jobs its ThrottledWorker's processor ran. */
  delivered: Map<string, number>;
  close(): Promise<void>;
}

const stripe = Throttle.named('stripe').key([Key.data('customer')]).limit(2, '1m');
const partner = Throttle.named('partner').limit(1, '1m');

function jobsOf(customer: string, count: number) {
  return Array.from({ length: count }, () => ({ name: 'charge', data: { customer } }));
}

export async function startClusterOpsScenario(options: { declarationTtlMs?: number } = {}): Promise<ClusterOpsScenario> {
  const cluster = await startRedisCluster();
  const client = newClusterClient(cluster.seeds);
  const admin = new ThrottleAdmin({ connection: client });
  const logger = pino({ level: 'silent' });
  const workers = new Map<string, ThrottledWorker>();
  const delivered = new Map<string, number>();
  const closers: (() => Promise<unknown>)[] = [];
  const start = async (queue: string, throttles: Throttle[], throttlePrefix?: string) => {
    delivered.set(queue, 0);
    const worker = new ThrottledWorker(queue, async () => { delivered.set(queue, delivered.get(queue)! + 1); }, {
      connection: client, throttles, logger, throttlePrefix, declarationTtlMs: options.declarationTtlMs,
    });
    worker.on('error', () => undefined);
    workers.set(queue, worker);
    closers.push(() => worker.close());
    await worker.waitUntilReady();
  };
  const add = async (queue: string, jobs: ReturnType<typeof jobsOf>) => {
    const q = new Queue(queue, { connection: client });
    await q.addBulk(jobs);
    await q.close();
  };
  const settled = async (queue: string, by: ThrottleAdmin = admin) => {
    let seen = '';
    await waitFor(async () => {
      const held = (await by.queueStats(queue)).heldByFullBuckets;
      seen = `delivered ${delivered.get(queue)}, held by full buckets ${held}`;
      return delivered.get(queue) === (DELIVERED[queue] ?? 1) && held === (HELD[queue] ?? 2);
    }, 20_000, `${queue} to settle (${DELIVERED[queue] ?? 1} delivered and ${HELD[queue] ?? 2} held)`)
      .catch((error: Error) => { throw new Error(`${error.message}; seen last: ${seen}`); });
  };
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
    await admin.close().catch(() => undefined);
    client.disconnect();
    await cluster.stop();
  };
  try {
    for (const queue of STRIPE_QUEUES) await start(queue, [stripe]);
    await start(SHARED_QUEUE, [partner], SHARED_NAMESPACE);
    const plain = new Worker(PLAIN_WORKER_QUEUE, async () => undefined, { connection: client });
    plain.on('error', () => undefined);
    closers.push(() => plain.close());
    await plain.waitUntilReady();

    // One queue at a time, so that which jobs go and which are held is known.
    await add('{bull}orders', [...jobsOf('acme', 4), ...jobsOf('b1', 1)]);
    await settled('{bull}orders');
    await add('{bull}refunds', [...jobsOf('acme', 4), ...jobsOf('b2', 1)]);
    await settled('{bull}refunds');
    await add('{refunds}', jobsOf('c2', 3));
    await settled('{refunds}');
    await add('{invoices}', [...jobsOf('acme', 2), ...jobsOf('c3', 1)]);
    await settled('{invoices}');
    await add(SHARED_QUEUE, jobsOf('p', 3));
    const sharedAdmin = new ThrottleAdmin({ connection: client, throttlePrefix: SHARED_NAMESPACE });
    closers.push(() => sharedAdmin.close());
    await settled(SHARED_QUEUE, sharedAdmin);
    // The plain Worker and the ThrottledWorker of '{orders}' have blocked on its marker, on its master.
    await waitFor(async () => (await admin.queueStats(PLAIN_WORKER_QUEUE)).plainWorkers === 1, 20_000, 'the plain Worker of {orders} to show');
  } catch (error) {
    await close();
    throw error;
  }
  return { cluster, client, admin, workers, delivered, close };
}
