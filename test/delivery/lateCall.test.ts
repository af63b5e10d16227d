import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Throttle, ThrottleKeys } from '../../src';
import { takeNextJobs } from '../../src/delivery/takeNextJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

/**
 * Exact delivery: a call that reaches Redis after the time its caller gave (it waited on a frozen master,
 * which may have been replaced meanwhile) counts and delivers nothing throttled; the next call does.
 */
describe('a late exact delivery call', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('late');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('delivers nothing throttled, and the next call in time delivers it', async () => {
    // A worker that never runs registers and publishes the queue's config; the test makes the calls.
    const worker = bed.worker('late', null, { autorun: false, throttles: [Throttle.named('api').limit(10, '1m')] });
    await worker.waitUntilReady();
    const queue: Queue = bed.queue('late');
    await queue.add('call', {});
    const keys = new ThrottleKeys(bed.prefix);
    const call = {
      bullmqKeys: new QueueKeys(bed.prefix).getKeys('late'), queueKeys: keys.queue('late'), throttlePrefix: keys.throttlePrefix,
      lockDuration: 30_000, leaseMs: 0, workerName: '', gen: (await redis.hget(keys.queue('late').state, 'gen'))!, durableRedis: false,
    };
    const runner = new ScriptRunner(redis);
    const [seconds, micros] = await redis.time();
    const nowUs = Number(seconds) * 1e6 + Number(micros);
    const late = await takeNextJobs(runner, { ...call, tokens: ['t1'], lateAfterUs: nowUs - 1 });
    expect(late.jobs).toEqual([]);
    expect(await redis.hgetall(keys.windowCounter('api', '-', 60_000))).toEqual({});
    const inTime = await takeNextJobs(runner, { ...call, tokens: ['t2'], lateAfterUs: nowUs + 60_000_000 });
    expect(inTime.jobs).toHaveLength(1);
  });
});
