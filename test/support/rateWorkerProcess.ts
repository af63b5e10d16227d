/** A child process: one ThrottledWorker declaring the rates it is given, printing its deliveries when it ends. */
import { Cost, Key, Throttle, ThrottledWorker, WindowInput } from '../../src';
import { connectionFor } from './bullmq';

interface RateConfig { n: number; per: WindowInput; burst: number }
const config = JSON.parse(process.env.RATE_WORKER ?? '{}') as {
  url: string; prefix: string; queue: string; runMs: number; concurrency: number; shared: RateConfig; perCustomer?: RateConfig; processMs?: number;
  /** The shared rate counts each job's data.units (Cost.data) instead of 1. */
  costed?: boolean;
};
const deliveries: { processedOn: number; startedAt: number; customer: string; units?: number }[] = [];
const shared = Throttle.named('rated').rate(config.shared.n, config.shared.per, { burst: config.shared.burst });
const throttles = [config.costed ? shared.cost(Cost.data('units')) : shared];
if (config.perCustomer) {
  const { n, per, burst } = config.perCustomer;
  throttles.push(Throttle.named('rated-per-customer').key([Key.data('customer')]).rate(n, per, { burst }));
}
const worker = new ThrottledWorker(config.queue, async (job) => {
  // The moment the processor starts, on this machine's clock (every process of the test shares it), sub-ms.
  deliveries.push({ processedOn: job.processedOn!, startedAt: performance.timeOrigin + performance.now(), customer: job.data.customer, units: job.data.units });
  if (config.processMs) await new Promise((resolve) => setTimeout(resolve, Math.random() * config.processMs!));
}, { connection: connectionFor(config.url), prefix: config.prefix, concurrency: config.concurrency, throttles });
setTimeout(async () => {
  await worker.close();
  // Jobs put back for starting late spent a rate token each that no processor used (rates keep what they grant).
  process.stdout.write(JSON.stringify({ deliveries, putBack: worker.startDeadline.putBack, countedTooLate: worker.startDeadline.countedTooLate }));
  process.exit(0);
}, config.runMs);
