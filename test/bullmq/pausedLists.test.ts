import { Redis } from 'ioredis';
import { ThrottleKeys } from '../../src/keys/ThrottleKeys';
import { ScriptRunner } from '../../src/lua/scripts';
import { runIntakeJobs } from '../../src/lua/calls/intakeJobs';
import { takeNextJobs } from '../../src/delivery/takeNextJobs';
import { selectAdapter } from '../../src/bullmq/selectAdapter';
import { newRedis } from '../support/redis';
import { WorkerTestBed } from '../support/bullmq';

/**
 * Our scripts put jobs back where bullmq keeps waiting jobs (lua/includes/bullmq5|bullmq6/queueLists.lua).
 * On bullmq 5 that is the `paused` list while the queue is paused: resuming renames paused to wait,
 * overwriting it, so a job pushed to wait while paused would be lost. On bullmq 6 it is wait either way.
 * The same checks hold on both lines; on bullmq 5 they fail if our Lua pushes to wait while paused.
 */
describe(`waiting jobs our scripts put back, on a paused queue (bullmq ${selectAdapter().line})`, () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeAll(() => { redis = newRedis(); });
  afterAll(async () => { await redis.quit(); });
  beforeEach(() => { bed = new WorkerTestBed('paused-lists'); });
  afterEach(async () => { await bed.close(redis); });

  it('a job whose intake lease ends while the queue is paused is waiting again after resume, with the jobs added meanwhile', async () => {
    const queue = bed.queue('lease');
    const keys = queue.keys;
    const intake = new ThrottleKeys(bed.prefix).queue('lease').intake;
    const runner = new ScriptRunner(redis);
    const a = await queue.add('a', {});
    const taken = await runIntakeJobs(runner, { bullmqKeys: keys, intake, mostJobs: 10, leaseMs: 1 });
    expect(taken.jobs).toHaveLength(1);
    await queue.pause();
    const b = await queue.add('b', {});
    await new Promise((r) => setTimeout(r, 20));
    // The lease has ended: the job goes back; the queue is paused, so none is taken.
    const again = await runIntakeJobs(runner, { bullmqKeys: keys, intake, mostJobs: 10, leaseMs: 1 });
    expect(again.jobs).toHaveLength(0);
    await queue.resume();
    expect((await redis.lrange(keys.wait, 0, -1)).sort()).toEqual([a.id, b.id].sort());
    expect(await redis.zcard(intake)).toBe(0);
  });

  it('a delayed job promoted by the delivery script while the queue is paused is waiting after resume, with the jobs added meanwhile', async () => {
    const queue = bed.queue('delayed');
    const keys = queue.keys;
    const runner = new ScriptRunner(redis);
    await queue.pause();
    const delayed = await queue.add('d', {}, { delay: 10 });
    const added = await queue.add('b', {});
    await new Promise((r) => setTimeout(r, 30));
    const reply = await takeNextJobs(runner, {
      bullmqKeys: keys, queueKeys: new ThrottleKeys(bed.prefix).queue('delayed'), throttlePrefix: new ThrottleKeys(bed.prefix).throttlePrefix,
      lockDuration: 30_000, leaseMs: 0, workerName: '', gen: '', tokens: ['t'], durableRedis: false,
    });
    expect(reply.jobs).toEqual([]);
    expect(await redis.zcard(keys.delayed)).toBe(0);
    await queue.resume();
    expect((await redis.lrange(keys.wait, 0, -1)).sort()).toEqual([delayed.id, added.id].sort());
  });
});
