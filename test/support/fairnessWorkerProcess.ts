/**
 * A child process: one ThrottledWorker with fair shares by data.tenant under a shared limit; prints each start
 * (bullmq's processedOn and the tenant) when it has run `runMs`.
 */
import { Key, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.FAIRNESS_WORKER ?? '{}') as { url: string; prefix: string; queue: string; runMs: number; max: number; windowMs: number };
const starts: { at: number; tenant: string }[] = [];
const worker = new ThrottledWorker(config.queue, async (job) => {
  starts.push({ at: job.processedOn!, tenant: job.data.tenant });
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 5,
  fairness: { key: Key.data('tenant') },
  throttles: [Throttle.named('api').limit(config.max, config.windowMs)],
});
setTimeout(async () => {
  await worker.close();
  process.stdout.write(JSON.stringify(starts));
  process.exit(0);
}, config.runMs);
