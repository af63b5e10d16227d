/**
 * `npm run demo`: one queue with a mixed workload, paced live by two throttles, then checked against
 * the guarantee from the jobs' processedOn.
 */
import { Job, Queue } from 'bullmq';
import { randomBytes } from 'node:crypto';
import { Key, Missing, mostInAnyWindow, Throttle, ThrottledWorker } from '../index';
import IORedis from 'ioredis';
import { deleteKeysUnder } from '../redis/keysUnder';
import { demoRedis } from './demoRedis';
import { DemoView, BucketRow } from './demoView';

// An unkeyed throttle would pace every job of the queue, emails too: keying it on an attribute only
// charges have makes it one bucket for exactly the jobs that call Stripe.
const stripe = Throttle.named('stripe').key([Key.attribute('uses_stripe')]).whenKeyMissing(Missing.Unthrottled).limit(8, '1s');
const perCustomer = Throttle.named('stripe-per-customer').key([Key.attribute('stripe_account')]).whenKeyMissing(Missing.Unthrottled).limit(4, '1s');
const SMALL = ['globex', 'initech', 'umbrella', 'hooli', 'stark'];

async function main(): Promise<void> {
  const { url, server } = await demoRedis();
  const parsed = new URL(url);
  const connection = { host: parsed.hostname, port: Number(parsed.port || 6379), password: parsed.password || undefined, maxRetriesPerRequest: null };
  const prefix = `demo-${randomBytes(3).toString('hex')}`;
  const queue = new Queue('orders', { connection, prefix });
  const delivered: Job[] = [];
  const startedAt = Date.now();

  const worker = new ThrottledWorker('orders', async (job) => {
    delivered.push(job);
    await new Promise((r) => setTimeout(r, 20)); // "call Stripe"
  }, {
    connection, prefix, concurrency: 20,
    throttles: [stripe, perCustomer],
    attributes: (job) => (job.name === 'charge'
      ? { uses_stripe: true, stripe_account: (job.data as { customer: string }).customer }
      : {}),
  });
  worker.on('error', (error) => process.stderr.write(`worker error: ${error.message}\n`));
  await worker.waitUntilReady();

  // Producers change nothing: plain queue.addBulk, a big customer's backlog first.
  const jobs = [
    ...Array.from({ length: 40 }, (_, i) => ({ name: 'charge', data: { customer: 'acme', n: i } })),
    ...SMALL.flatMap((customer) => Array.from({ length: 3 }, (_, n) => ({ name: 'charge', data: { customer, n } }))),
    ...Array.from({ length: 30 }, (_, n) => ({ name: 'email', data: { to: `user${n}@example.com` } })),
  ];
  await queue.addBulk(jobs);

  const bucketOf = (job: { name: string; data: unknown }) => (job.name === 'charge' ? (job.data as { customer: string }).customer : 'emails');
  const totals = new Map<string, number>();
  for (const job of jobs) totals.set(bucketOf(job), (totals.get(bucketOf(job)) ?? 0) + 1);

  const view = new DemoView(process.stdout);
  const rows = (): BucketRow[] => {
    const now = Date.now();
    const recent = (filter: (job: Job) => boolean) => delivered.filter((job) => filter(job) && job.processedOn! > now - 1000 - clockSkew).length;
    const done = (bucket: string) => delivered.filter((job) => bucketOf(job) === bucket).length;
    return [
      { label: 'stripe (all charges)', limit: 8, inLastSecond: recent((j) => j.name === 'charge'), delivered: delivered.filter((j) => j.name === 'charge').length, total: jobs.length - 30 },
      ...['acme', ...SMALL].map((customer) => ({
        label: `  per-customer ${customer}`, limit: 4, inLastSecond: recent((j) => bucketOf(j) === customer), delivered: done(customer), total: totals.get(customer)!,
      })),
      { label: 'emails (unthrottled)', limit: undefined, inLastSecond: recent((j) => j.name === 'email'), delivered: done('emails'), total: 30 },
    ];
  };
  // processedOn is on the Redis clock; the view's "last second" is read on ours.
  let clockSkew = 0;
  const timer = setInterval(() => {
    if (delivered.length > 0) clockSkew = Date.now() - delivered[delivered.length - 1].processedOn!;
    view.render((Date.now() - startedAt) / 1000, rows());
  }, 250);

  const deadline = Date.now() + 30_000;
  while (delivered.length < jobs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  clearInterval(timer);
  view.render((Date.now() - startedAt) / 1000, rows());

  const finishedAt = (bucket: string) => Math.max(...delivered.filter((j) => bucketOf(j) === bucket).map((j) => j.processedOn!)) - Math.min(...delivered.map((j) => j.processedOn!));
  const checks = [
    { what: 'stripe: most charges in any 1 s', most: mostInAnyWindow(delivered.filter((j) => j.name === 'charge').map((j) => j.processedOn!), 1000), limit: 8 },
    ...['acme', ...SMALL].map((customer) => ({
      what: `stripe-per-customer ${customer}: most in any 1 s`,
      most: mostInAnyWindow(delivered.filter((j) => bucketOf(j) === customer).map((j) => j.processedOn!), 1000),
      limit: 4,
    })),
  ];
  const out = process.stdout;
  out.write('\nThe guarantee, checked from job.processedOn (the Redis clock at each delivery):\n');
  for (const check of checks) out.write(`  ${check.most <= check.limit ? 'ok  ' : 'FAIL'} ${check.what.padEnd(46)} ${String(check.most).padStart(2)} ≤ ${check.limit}\n`);
  out.write(`\nFlowing past the big backlog: emails all delivered by ${(finishedAt('emails') / 1000).toFixed(2)} s, `
    + `small customers by ${(Math.max(...SMALL.map(finishedAt)) / 1000).toFixed(2)} s, acme's 40 charges by ${(finishedAt('acme') / 1000).toFixed(2)} s.\n`);
  const ok = checks.every((c) => c.most <= c.limit) && delivered.length === jobs.length;
  out.write(ok ? '\nAll deliveries stayed within every limit.\n' : '\nSomething went wrong: see above.\n');

  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  const redis = new IORedis(connection);
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
  await server?.stop();
  process.exitCode = ok ? 0 : 1;
}

main().catch((error) => {
  process.stderr.write(`demo failed: ${(error as Error).message}\n`);
  process.exit(1);
});
