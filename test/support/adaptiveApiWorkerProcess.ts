/**
 * A child process: one ThrottledWorker whose processor calls a simulated API that allows `apiLimit` calls in any
 * second (a sliding window kept in Redis, shared by every process) and answers the rest 429 with the time until
 * the window has room (Retry-After): the processor throws RetryAfterError then. Its throttle's rate is adaptive.
 * Prints each call (Redis time, answered or 429) at the end.
 */
import { Redis } from 'ioredis';
import { RetryAfterError, Throttle, ThrottledWorker } from '../../src';
import { connectionFor } from './bullmq';

const config = JSON.parse(process.env.ADAPTIVE_API_WORKER ?? '{}') as {
  url: string; prefix: string; queue: string; runMs: number; apiLimit: number; apiKey: string;
  rate: number; burst: number; min: number; decrease: number; concurrency: number;
};

// The API: a sliding window of one second over the calls it answered; a call over the limit is refused with the
// milliseconds until the oldest answered call leaves the window.
const API = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 1000)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return { 0, now, tonumber(oldest[2]) + 1000 - now }
end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], 60000)
return { 1, now, 0 }`;

const redis = new Redis(config.url);
const calls: { at: number; ok: boolean }[] = [];
let callId = 0;
const worker = new ThrottledWorker(config.queue, async (job) => {
  const [ok, at, retryAfterMs] = (await redis.eval(API, 1, config.apiKey, config.apiLimit, `${process.pid}:${job.id}:${callId++}`)) as number[];
  calls.push({ at, ok: ok === 1 });
  if (ok !== 1) throw new RetryAfterError(Math.max(1, retryAfterMs));
}, {
  connection: connectionFor(config.url), prefix: config.prefix, concurrency: config.concurrency,
  throttles: [Throttle.named('partner').rate(config.rate, '1s', { burst: config.burst }).adaptive({ min: config.min, decrease: config.decrease })],
});
setTimeout(async () => {
  await worker.close();
  await redis.quit();
  process.stdout.write(JSON.stringify(calls));
  process.exit(0);
}, config.runMs);
