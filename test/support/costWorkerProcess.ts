/**
 * A child process: one ThrottledWorker on a tokens-per-second throttle (each job counts job.data.tokens) beside a
 * requests limit; prints what it delivered (processedOn, tokens) when it stops. With grantorUrl, the throttles
 * are counted there (leased delivery).
 */
import { Cost, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.COST_WORKER ?? '{}') as { url: string; grantorUrl?: string; prefix: string; queue: string; runMs: number; tokens: number; requests: number };
// at: processedOn (Redis's clock); startedAt: the moment the processor starts (this machine's clock).
const delivered: { at: number; startedAt: number; cost: number }[] = [];
const worker = new ThrottledWorker(config.queue, async (job) => {
  delivered.push({ at: job.processedOn!, startedAt: performance.timeOrigin + performance.now(), cost: job.data.tokens });
  await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 30)));
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: 8,
  ...(config.grantorUrl ? { grantor: { connection: connectionFor(config.grantorUrl) } } : {}),
  throttles: [Throttle.named('llm-tokens').cost(Cost.data('tokens')).limit(config.tokens, '1s'), Throttle.named('llm-requests').limit(config.requests, '1s')],
});
setTimeout(async () => {
  await worker.close();
  process.stdout.write(JSON.stringify(delivered));
  process.exit(0);
}, config.runMs);
