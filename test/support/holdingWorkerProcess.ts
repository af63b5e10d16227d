/** A child process holding one ThrottledWorker that takes 1 job per customer per minute (so it holds the rest), until it is killed. */
import { Key, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.HOLDING_WORKER ?? '{}') as { url: string; prefix: string; queue: string; ttlMs: number };
const worker = new ThrottledWorker(config.queue, async () => undefined, {
  connection: connectionFor(config.url), prefix: config.prefix, declarationTtlMs: config.ttlMs,
  throttles: [Throttle.named('per-customer').key([Key.data('customer')]).limit(1, '1m')],
});
worker.waitUntilReady().then(() => process.stdout.write('ready\n'));
