/**
 * A child process: one ThrottledWorker on a per-domain concurrency throttle, with short locks and stalled checks
 * so that a killed process's jobs are taken back within seconds. Each start and end is pushed to Redis as it
 * happens (a killed process cannot print at the end). With `hang`, its processor never returns. With grantorUrl,
 * the throttle is counted there (leased delivery).
 */
import { Redis } from 'ioredis';
import { Key, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.IN_FLIGHT_WORKER ?? '{}') as { url: string; grantorUrl?: string; prefix: string; queue: string; n: number; hang: boolean; log: string; runMs: number };
const redis = new Redis(config.url);
const worker = new ThrottledWorker(config.queue, async (job) => {
  await redis.rpush(config.log, JSON.stringify({ event: 'start', id: job.id, domain: job.data.domain, at: job.processedOn, pid: process.pid }));
  if (config.hang) await new Promise(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 80)));
  await redis.rpush(config.log, JSON.stringify({ event: 'end', id: job.id, at: Date.now(), pid: process.pid }));
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 6, lockDuration: 1000, stalledInterval: 1000, maxStalledCount: 5,
  ...(config.grantorUrl ? { grantor: { connection: connectionFor(config.grantorUrl) } } : {}),
  throttles: [Throttle.named('crawl').key([Key.data('domain')]).concurrency(config.n)],
});
void worker.waitUntilReady().then(() => redis.rpush(config.log, JSON.stringify({ event: 'ready', pid: process.pid })));
setTimeout(async () => {
  await worker.close();
  await redis.quit();
  process.exit(0);
}, config.runMs);
