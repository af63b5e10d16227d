import { QueueKeys } from 'bullmq';
import { Key } from '../../src/declarations/Key';
import { Throttle } from '../../src/declarations/Throttle';
import { takeNextJobs } from '../../src/delivery/takeNextJobs';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { ScriptRunner } from '../../src/lua/scripts';
import { ThrottledWorker } from '../../src/worker/ThrottledWorker';
import type { BenchmarkContext } from '../types';
import { addBacklog, BullmqRig } from './bullmqRig';
import { keysUnder } from './keys';

/**
 * What a concurrency bucket costs while one of its jobs is in flight (lua/includes/inFlightCounter.lua): its
 * counter HASH and the job's field in the queue's in-flight index. An idle bucket holds no key. Jobs are
 * delivered by the delivery script itself (no processor runs), one per bucket, and stay in flight while measured.
 */
export async function concurrencyBucketBytes(context: BenchmarkContext, buckets: number): Promise<{ counter: number; indexField: number; encoding: string; counted: number }> {
  const rig = new BullmqRig(context.redisUrl, `${context.prefix}-inflight`, context.redis);
  try {
    const throttle = Throttle.named('many-slots').key([Key.data('customer')]).concurrency(3);
    // A worker that never runs registers the throttle and publishes the queue's config.
    const worker = rig.track(new ThrottledWorker('slots', null, { connection: rig.connection, prefix: rig.prefix, autorun: false, throttles: [throttle] }));
    await worker.waitUntilReady();
    const queue = rig.queue('slots');
    await addBacklog(queue, buckets, (i) => ({ customer: `c${i}` }));
    const keys = new ThrottleKeys(rig.prefix);
    const queueKeys = keys.queue('slots');
    const runner = new ScriptRunner(context.redis);
    const gen = (await context.redis.hget(queueKeys.state, 'gen'))!;
    let delivered = 0;
    while (delivered < buckets) {
      const reply = await takeNextJobs(runner, {
        bullmqKeys: new QueueKeys(rig.prefix).getKeys('slots'), queueKeys, throttlePrefix: keys.throttlePrefix, lockDuration: 600_000, leaseMs: 0,
        workerName: '', gen, durableRedis: false, lateAfterUs: 0, tokens: Array.from({ length: 200 }, (_, i) => `t${delivered}-${i}`),
      });
      if (reply.jobs.length === 0) throw new Error(`concurrency memory: delivered ${delivered} of ${buckets}, then none`);
      delivered += reply.jobs.length;
    }
    const base = keys.throttleBase(throttle.name);
    const counters = (await keysUnder(context.redis, `${base}:b:`)).filter((k) => k.endsWith(':c'));
    const counter = Number(await context.redis.call('MEMORY', 'USAGE', counters[0], 'SAMPLES', '0'));
    const index = Number(await context.redis.call('MEMORY', 'USAGE', queueKeys.inFlight, 'SAMPLES', '0'));
    return { counter, indexField: Math.round(index / buckets), encoding: String(await context.redis.call('OBJECT', 'ENCODING', counters[0])), counted: counters.length };
  } finally {
    await rig.close();
  }
}
