/**
 * `npm run demo`: one queue with a mixed workload, paced live by two throttles, then checked against
 * the guarantee from the jobs' processedOn.
 */
import { Queue } from 'bullmq';
import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { deleteKeysUnder } from '../redis/keysUnder';
import { redisTimeMs } from '../redis/redisClock';
import { LiveFrames } from '../terminal/LiveFrames';
import { demoRedis } from './demoRedis';
import { demoRows } from './demoRows';
import { guaranteeChecks, summaryLines } from './demoSummary';
import { demoFrame } from './demoView';
import { addDemoJobs, bucketOf, Delivery, demoJobs, startDemoWorker } from './demoWorkload';

async function main(): Promise<void> {
  const { url, server } = await demoRedis();
  const parsed = new URL(url);
  const connection = { host: parsed.hostname, port: Number(parsed.port || 6379), password: parsed.password || undefined, maxRetriesPerRequest: null };
  const prefix = `demo-${randomBytes(3).toString('hex')}`;
  const redis = new IORedis(connection);
  const queue = new Queue('orders', { connection, prefix });
  const delivered: Delivery[] = [];
  const startedAt = Date.now();

  const worker = startDemoWorker({ connection, prefix, onDelivery: (d) => delivered.push(d) });
  worker.on('error', (error) => process.stderr.write(`worker error: ${error.message}\n`));
  await worker.waitUntilReady();

  const jobs = demoJobs();
  await addDemoJobs(queue, jobs);
  const totals = new Map<string, number>();
  for (const job of jobs) totals.set(bucketOf(job), (totals.get(bucketOf(job)) ?? 0) + 1);

  const frames = new LiveFrames(process.stdout);
  let lastPlainSecond = -1;
  // Windows end now on the Redis clock, the clock processedOn is on (ours may be off from it).
  const draw = async (always = false) => {
    const elapsedS = (Date.now() - startedAt) / 1000;
    // Off a terminal frames pile up: one a second is enough to follow.
    if (!frames.inPlace && !always && Math.floor(elapsedS) === lastPlainSecond) return;
    lastPlainSecond = Math.floor(elapsedS);
    frames.draw(demoFrame(elapsedS, demoRows(delivered, totals, await redisTimeMs(redis, `${prefix}:demo`))));
  };
  let drawing = Promise.resolve();
  const timer = setInterval(() => { drawing = drawing.then(() => draw()).catch(() => undefined); }, 250);

  const deadline = Date.now() + 30_000;
  while (delivered.length < jobs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  clearInterval(timer);
  await drawing;
  await draw(true);
  frames.done();

  const checks = guaranteeChecks(delivered);
  const allDelivered = delivered.length === jobs.length;
  // Frames printed one after another already end in a blank line.
  process.stdout.write(`${summaryLines(delivered, checks, allDelivered, frames.width).slice(frames.inPlace ? 0 : 1).join('\n')}\n`);
  const ok = allDelivered && checks.every((c) => c.most <= c.limit);

  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
  await server?.stop();
  process.exitCode = ok ? 0 : 1;
}

main().catch((error) => {
  process.stderr.write(`demo failed: ${(error as Error).message}\n`);
  process.exit(1);
});
