/** A child process holding one ThrottledWorker that declares api at `max` per second, until it is killed. */
import { Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.DECLARING_WORKER ?? '{}') as { url: string; prefix: string; queue: string; ttlMs: number; max: number };
const worker = new ThrottledWorker(config.queue, null, {
  connection: connectionFor(config.url), prefix: config.prefix, declarationTtlMs: config.ttlMs,
  throttles: [Throttle.named('api').limit(config.max, '1s')],
});
worker.waitUntilReady().then(() => process.stdout.write('ready\n'));
