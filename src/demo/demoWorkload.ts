import { Job, Queue, type ConnectionOptions } from 'bullmq';
import { Key, Missing, Throttle, ThrottledWorker } from '../index';

export const STRIPE_LIMIT = 8;
export const PER_CUSTOMER_LIMIT = 4;
export const SMALL_CUSTOMERS = ['globex', 'initech', 'umbrella', 'hooli', 'stark'];

// An unkeyed throttle would pace every job of the queue, emails too: keying it on an attribute only
// charges have makes it one bucket for exactly the jobs that call Stripe.
export const stripe = Throttle.named('stripe').key([Key.attribute('uses_stripe')]).whenKeyMissing(Missing.Unthrottled).limit(STRIPE_LIMIT, '1s');
export const perCustomer = Throttle.named('stripe-per-customer').key([Key.attribute('stripe_account')]).whenKeyMissing(Missing.Unthrottled).limit(PER_CUSTOMER_LIMIT, '1s');

export interface DemoJob {
  name: 'charge' | 'email';
  data: { customer?: string; to?: string; n: number };
}

export interface WorkloadSize {
  acme: number;
  perSmallCustomer: number;
  emails: number;
}

export const DEMO_SIZE: WorkloadSize = { acme: 40, perSmallCustomer: 3, emails: 30 };

/** A big customer's backlog first, then a few charges of each small customer, then unthrottled emails. */
export function demoJobs(size: WorkloadSize = DEMO_SIZE): DemoJob[] {
  return [
    ...Array.from({ length: size.acme }, (_, n) => ({ name: 'charge' as const, data: { customer: 'acme', n } })),
    ...SMALL_CUSTOMERS.flatMap((customer) => Array.from({ length: size.perSmallCustomer }, (_, n) => ({ name: 'charge' as const, data: { customer, n } }))),
    ...Array.from({ length: size.emails }, (_, n) => ({ name: 'email' as const, data: { to: `user${n}@example.com`, n } })),
  ];
}

/** The customer a charge is for; 'emails' for every email. */
export function bucketOf(job: { name: string; data: unknown }): string {
  return job.name === 'charge' ? (job.data as { customer: string }).customer : 'emails';
}

/** A delivery as the demo's views count it: processedOn is the Redis clock at delivery. */
export interface Delivery {
  bucket: string;
  charge: boolean;
  processedOn: number;
  /** When its processor started (ms, this process's clock): where the API it calls sees it. */
  startedAt: number;
}

/** The demo's worker: both throttles, each delivery handed to `onDelivery` as its processor starts. */
export function startDemoWorker(options: { connection: ConnectionOptions; prefix: string; onDelivery: (delivery: Delivery) => void }): ThrottledWorker {
  return new ThrottledWorker('orders', async (job: Job) => {
    options.onDelivery({ bucket: bucketOf(job), charge: job.name === 'charge', processedOn: job.processedOn!, startedAt: performance.timeOrigin + performance.now() });
    await new Promise((r) => setTimeout(r, 20)); // "call Stripe"
  }, {
    connection: options.connection, prefix: options.prefix, concurrency: 20,
    throttles: [stripe, perCustomer],
    attributes: (job) => (job.name === 'charge' ? { uses_stripe: true, stripe_account: (job.data as { customer: string }).customer } : {}),
  });
}

/** Producers change nothing: plain queue.addBulk. */
export async function addDemoJobs(queue: Queue, jobs: readonly DemoJob[]): Promise<void> {
  await queue.addBulk(jobs.map((job) => ({ name: job.name, data: job.data })));
}
