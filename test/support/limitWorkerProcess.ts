/** A child process: one ThrottledWorker declaring 'api' at 10 per 1 s, printing its deliveries' processedOn at the end. */
import { Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.LIMIT_WORKER ?? '{}') as { url: string; prefix: string; queue: string; runMs: number };
const starts: number[] = [];
const worker = new ThrottledWorker(config.queue, async (job) => { starts.push(job.processedOn!); }, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 5, throttles: [Throttle.named('api').limit(10, '1s')],
});
setTimeout(async () => {
  await worker.close();
  process.stdout.write(JSON.stringify(starts));
  process.exit(0);
}, config.runMs);
