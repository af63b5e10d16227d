/** A child process: one ThrottledWorker sharing 'stripe' and 'stripe-per-customer', printing its deliveries. */
import { Key, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.GUARANTEE_WORKER ?? '{}') as { url: string; prefix: string; queue: string; runMs: number };
const deliveries: { processedOn: number; startedAt: number; customer: string }[] = [];
const worker = new ThrottledWorker(config.queue, async (job) => {
  // startedAt: the moment the processor starts, on this machine's clock (the test's processes share it).
  deliveries.push({ processedOn: job.processedOn!, startedAt: performance.timeOrigin + performance.now(), customer: job.data.customer });
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 10,
  throttles: [
    Throttle.named('stripe').limit(80, '1s'),
    Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(40, '1s'),
  ],
});
setTimeout(async () => {
  await worker.close();
  process.stdout.write(JSON.stringify(deliveries));
  process.exit(0);
}, config.runMs);
