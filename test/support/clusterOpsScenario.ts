import { Queue, Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import pino from 'pino';
import { Key, Throttle, ThrottleAdmin, ThrottledWorker } from '../../src';
import { waitFor } from './bullmq';
import { newClusterClient } from './clusterClient';
import { RedisCluster, startRedisCluster } from './redisCluster';

/**
 * A 3-master, 3-replica cluster and the default prefix 'bull', with the throttle 'stripe' (Key.data('customer'),
 * 2 per 1m) declared by a ThrottledWorker on each of four queues in three slots on two masters:
 * - '{bull}orders' and '{bull}refunds' hash with the namespace ('bull::throttle:{bull}', slot 9263): they are
 *   in the exact layout, one slot, and deliver. orders gets 4 jobs of acme and 1 of b1 (3 delivered: acme 2, b1;
 *   2 held), then refunds 4 of acme and 1 of b2 (1 delivered: b2; 4 held, acme being full): 4 delivered, 6 held,
 *   all on the acme bucket.
 * - '{orders}' (slot 105, another master) and '{refunds}' (slot 7042): their workers register (that works on any
 *   slot) but get no jobs, since until lease mode a delivery from a queue outside the namespace's slot would
 *   compose throttle keys of another slot. '{orders}' also has a plain bullmq Worker, which bypasses the throttles.
 * - '{shared}jobs' declares 'partner' (1 per 1m, unkeyed) under throttlePrefix '{shared}' (its own slot, which
 *   the queue's tag shares): 3 jobs, 1 delivered, 2 held.
 */
export const EXACT_QUEUES = ['{bull}orders', '{bull}refunds'] as const;
export const OTHER_SLOT_QUEUES = ['{orders}', '{refunds}'] as const;
export const SHARED_QUEUE = '{shared}jobs';
export const SHARED_NAMESPACE = '{shared}';
export const DELIVERED = { '{bull}orders': 3, '{bull}refunds': 1 } as const;
export const HELD = { '{bull}orders': 2, '{bull}refunds': 4 } as const;

export interface ClusterOpsScenario {
  cluster: RedisCluster;
  client: Cluster;
  admin: ThrottleAdmin;
  workers: Map<string, ThrottledWorker>;
  /** Queue -> jobs its processor ran. */
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
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
    await admin.close().catch(() => undefined);
    client.disconnect();
    await cluster.stop();
  };
  try {
    for (const queue of [...EXACT_QUEUES, ...OTHER_SLOT_QUEUES]) await start(queue, [stripe]);
    await start(SHARED_QUEUE, [partner], SHARED_NAMESPACE);
    const plain = new Worker(OTHER_SLOT_QUEUES[0], async () => undefined, { connection: client });
    plain.on('error', () => undefined);
    closers.push(() => plain.close());
    await plain.waitUntilReady();

    await add('{bull}orders', [...jobsOf('acme', 4), ...jobsOf('b1', 1)]);
    await waitFor(async () => delivered.get('{bull}orders') === 3 && (await admin.queueStats('{bull}orders')).heldByFullBuckets === 2, 20_000, 'orders: 3 delivered, 2 held');
    await add('{bull}refunds', [...jobsOf('acme', 4), ...jobsOf('b2', 1)]);
    await waitFor(async () => delivered.get('{bull}refunds') === 1 && (await admin.queueStats('{bull}refunds')).heldByFullBuckets === 4, 20_000, 'refunds: 1 delivered, 4 held');
    await add(SHARED_QUEUE, jobsOf('p', 3));
    const sharedAdmin = new ThrottleAdmin({ connection: client, throttlePrefix: SHARED_NAMESPACE });
    closers.push(() => sharedAdmin.close());
    await waitFor(async () => delivered.get(SHARED_QUEUE) === 1 && (await sharedAdmin.queueStats(SHARED_QUEUE)).heldByFullBuckets === 2, 20_000, 'shared: 1 delivered, 2 held');
    // The plain Worker and every ThrottledWorker of '{orders}' have blocked on its marker, on its master.
    await waitFor(async () => (await admin.queueStats('{orders}')).plainWorkers === 1, 20_000, 'the plain Worker of {orders} to show');
  } catch (error) {
    await close();
    throw error;
  }
  return { cluster, client, admin, workers, delivered, close };
}

/** Stops a worker as a crash would: no more heartbeats, no withdrawal, so its declaration lapses after its TTL. */
export async function crash(worker: ThrottledWorker): Promise<void> {
  const gate = (worker as unknown as { gate: { heartbeat?: NodeJS.Timeout; closed: boolean } }).gate;
  clearInterval(gate.heartbeat);
  gate.closed = true;
  await Worker.prototype.close.call(worker, true);
}
