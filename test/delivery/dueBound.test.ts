import { Queue, QueueKeys } from 'bullmq';
import { Redis } from 'ioredis';
import { Key, Missing, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { parseTakeReply, takeNextJobsCall, TakeReply } from '../../src/lua/calls/takeNextJobs';
import { ScriptRunner } from '../../src/lua/scripts';
import { connectionFor } from '../support/bullmq';
import { deleteKeysUnder, newRedis, uniquePrefix } from '../support/redis';
import { steerableLuaScripts } from '../support/testClock';

// lua/includes/wakeDueBuckets.lua and takeJobsBody: a call with more buckets due than it wakes (8) delivers nothing
// ordered after the first waiter of the others, and a newer job it looked at stays in wait for the next call.
describe('a delivery call with more buckets due than it wakes', () => {
  let redis: Redis;
  let prefix: string;
  const closers: (() => Promise<unknown>)[] = [];
  beforeEach(() => {
    redis = newRedis();
    prefix = uniquePrefix('dueBound');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  });

  /** A queue keyed on data.k at 1 per 1 s, a worker that never runs (it publishes the config), and direct delivery calls. */
  async function setUp() {
    const worker = new ThrottledWorker('due', null, {
      connection: connectionFor(), prefix, leaseMs: 0,
      throttles: [Throttle.named('per-k').key([Key.data('k')]).whenKeyMissing(Missing.Unthrottled).limit(1, '1s')],
    });
    closers.push(() => worker.close());
    await worker.waitUntilReady();
    const queue = new Queue('due', { connection: connectionFor(), prefix });
    closers.push(() => queue.close());
    const q = new ThrottleKeys(prefix).queue('due');
    const bullmqKeys = new QueueKeys(prefix).getKeys('due');
    const runner = new ScriptRunner(redis, steerableLuaScripts());
    const gen = (await redis.hget(q.state, 'gen'))!;
    let token = 0;
    // offsetMs: the scripts' clock that much ahead of Redis's.
    const take = async (slots: number, offsetMs: number): Promise<TakeReply> => {
      const spec = takeNextJobsCall({
        bullmqKeys, queueKeys: q, throttlePrefix: new ThrottleKeys(prefix).throttlePrefix, lockDuration: 30_000, leaseMs: 0,
        workerName: '', gen, durableRedis: false, tokens: Array.from({ length: slots }, () => `t${token++}`),
      });
      return parseTakeReply(await runner.run(spec.name, spec.keys, [...spec.args, offsetMs]) as unknown[]);
    };
    const names = async (reply: TakeReply) => Promise.all(reply.jobs.map(async (job) => (await queue.getJob(job.id))!.name));
    /** A filler for each key (its bucket full for 1 s), then a job of each, held. */
    const holdOneEach = async (keys: readonly string[]) => {
      await queue.addBulk(keys.map((k) => ({ name: `fill-${k}`, data: { k } })));
      expect(await names(await take(keys.length, 0))).toEqual(keys.map((k) => `fill-${k}`));
      await queue.addBulk(keys.map((k) => ({ name: `${k}-held`, data: { k } })));
      expect((await take(keys.length, 0)).jobs).toEqual([]);
    };
    return { queue, q, bullmqKeys, take, names, holdOneEach };
  }

  it('wakes 8 and delivers their held jobs; a newer job found next stays in wait, and goes after the other two', async () => {
    const { queue, bullmqKeys, take, names, holdOneEach } = await setUp();
    const keys = Array.from({ length: 10 }, (_, i) => `k${String(i + 1).padStart(2, '0')}`);
    await holdOneEach(keys);
    const [newer] = await queue.addBulk([{ name: 'newer', data: {} }]);
    // Every bucket has room 1 s later: ten due at once.
    const first = await take(20, 1_500);
    expect(await names(first)).toEqual(keys.slice(0, 8).map((k) => `${k}-held`));
    expect(first.more).toBe(true);
    expect(await redis.lrange(bullmqKeys.active, 0, -1)).not.toContain(newer.id);
    expect(await redis.lrange(bullmqKeys.wait, 0, -1)).toEqual([newer.id]);
    expect(await names(await take(20, 1_500))).toEqual(['k09-held', 'k10-held', 'newer']);
  });

  it('when the buckets it wakes have no class left, a newer job it looks at first stays in wait, not in active', async () => {
    const { queue, q, bullmqKeys, take, names, holdOneEach } = await setUp();
    await holdOneEach(['k09', 'k10']);
    // Eight buckets due before them whose classes left (their jobs removed, say): woken, they hand back nothing.
    const [, firstDue] = await redis.zrange(q.wakeups, '0', '0', 'WITHSCORES');
    for (let i = 1; i <= 8; i++) await redis.zadd(q.wakeups, String(Number(firstDue) - i), `per-k=gone${i}`);
    const [newer] = await queue.addBulk([{ name: 'newer', data: {} }]);
    const first = await take(20, 1_500);
    expect(first.jobs).toEqual([]);
    expect(first.more).toBe(true);
    expect(await redis.lrange(bullmqKeys.active, 0, -1)).not.toContain(newer.id);
    expect(await redis.lrange(bullmqKeys.wait, 0, -1)).toEqual([newer.id]);
    expect(await names(await take(20, 1_500))).toEqual(['k09-held', 'k10-held', 'newer']);
  });
});
