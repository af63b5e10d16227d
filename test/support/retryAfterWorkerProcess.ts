/**
 * A child process: one ThrottledWorker on a per-customer throttle whose processor, the first time any process
 * sees a job marked `trigger` (a Redis SET NX decides), throws RetryAfterError; prints its starts at the end.
 */
import { Redis } from 'ioredis';
import { Key, RetryAfterError, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.RETRY_AFTER_WORKER ?? '{}') as { url: string; prefix: string; queue: string; runMs: number; pauseMs: number; flagKey: string };
const redis = new Redis(config.url);
const starts: { at: number; customer: string; id: string; threw?: number }[] = [];
const worker = new ThrottledWorker(config.queue, async (job) => {
  const start: (typeof starts)[number] = { at: job.processedOn!, customer: job.data.customer, id: job.id! };
  starts.push(start);
  if (job.data.trigger && (await redis.set(config.flagKey, '1', 'NX')) === 'OK') {
    const [seconds, micros] = await redis.time();
    start.threw = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    throw new RetryAfterError(config.pauseMs);
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 3,
  throttles: [Throttle.named('api-per-customer').key([Key.data('customer')]).limit(100, '1s')],
});
setTimeout(async () => {
  await worker.close();
  await redis.quit();
  process.stdout.write(JSON.stringify(starts));
  process.exit(0);
}, config.runMs);
