import { Redis } from 'ioredis';
import { Job } from 'bullmq';
import { Throttle, ThrottleAdmin } from '../../src';
import { SnapshotRead, runTogether } from '../../src/admin/snapshotRead';
import { ScriptRunner } from '../../src/lua/scripts';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { testRedisUrl } from '../support/testRedis';

// Issue 27, item 2: the figures of one screen come from one read, so that they add up.
describe('reads at one moment', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('snap');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  it('SnapshotRead reads every kind of key in one script, at one Redis time', async () => {
    const base = `${bed.prefix}:snapshot`;
    await redis.hset(`${base}:h`, 'a', '1', 'b', '2', 'x,y', '3');
    const nowMs = Number((await redis.time())[0]) * 1000;
    await redis.zadd(`${base}:z`, nowMs - 60_000, 'past', nowMs + 60_000, 'future', nowMs + 120_000, 'later');
    await redis.set(`${base}:s`, 'text');
    const read = new SnapshotRead();
    const all = read.hgetall(`${base}:h`);
    const two = read.hmget(`${base}:h`, ['a', 'missing']);
    const comma = read.hget(`${base}:h`, 'x,y');
    const live = read.live(`${base}:z`);
    const first = read.first(`${base}:z`);
    const top = read.top(`${base}:z`, 2);
    const score = read.zscore(`${base}:z`, 'future');
    const text = read.get(`${base}:s`);
    const absent = read.get(`${base}:absent`);
    const snapshot = await read.run(new ScriptRunner(redis));
    expect(snapshot.nowMs).toBeGreaterThanOrEqual(nowMs);
    expect(all(snapshot)).toEqual({ a: '1', b: '2', 'x,y': '3' });
    expect(two(snapshot)).toEqual(['1', null]);
    expect(comma(snapshot)).toBe('3');
    expect(live(snapshot)).toBe(2);
    expect(first(snapshot)).toEqual(['past', nowMs - 60_000]);
    expect(top(snapshot)).toEqual([['later', nowMs + 120_000], ['future', nowMs + 60_000]]);
    expect(score(snapshot)).toBe(nowMs + 60_000);
    expect(text(snapshot)).toBe('text');
    expect(absent(snapshot)).toBeNull();
    // A value is taken only from its own read's snapshot.
    const other = new SnapshotRead();
    other.get(`${base}:s`);
    const otherSnapshot = await other.run(new ScriptRunner(redis));
    expect(() => text(otherSnapshot)).toThrow(/another read's snapshot/);
    const together = await runTogether(read, new ScriptRunner(redis), [other, read], new ScriptRunner(redis));
    expect(text(together(read))).toBe('text');
    await redis.del(`${base}:h`, `${base}:z`, `${base}:s`);
  });

  it('a bucket read while it fills and empties: full always with a time room returns, room now never beside a full count', async () => {
    const queue = bed.queue('flow');
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'call', data: { i } })));
    const worker = bed.worker('flow', async (_job: Job) => undefined, { concurrency: 5, throttles: [Throttle.named('flow').limit(5, 300).rate(20, '1s', { burst: 5 })] });
    const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: bed.prefix });
    try {
      await worker.waitUntilReady();
      let full = 0;
      let roomy = 0;
      // Read from the first delivery until the backlog is gone (12 windows of 300 ms at least).
      await waitFor(async () => (await admin.throttleBucket('flow')).limits[0].counted > 0, 10_000, 'the first delivery');
      for (let i = 0; i < 1_000 && (await queue.getCompletedCount()) < 60; i++) {
        const bucket = await admin.throttleBucket('flow');
        const window = bucket.limits[0];
        if (window.counted >= window.max) {
          full++;
          expect(window.roomAt).toBeGreaterThan(bucket.at);
          expect(bucket.nextRoomAt).toBeGreaterThan(bucket.at);
          expect(bucket.bindingNow).not.toBeNull();
        } else {
          roomy++;
          expect(window.roomAt).toBeNull();
        }
        if (bucket.rate && bucket.rate.room === 0) expect(bucket.rate.roomAt).toBeGreaterThan(bucket.at);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await waitFor(async () => (await queue.getCompletedCount()) === 60, 20_000, 'every job');
      console.log(`bucket read ${full} times full, ${roomy} times with room`);
      // A backlog of 60 on 5 per 300 ms: the bucket was read full, and each such read said when room returns.
      expect(full).toBeGreaterThan(0);
      expect(full + roomy).toBeGreaterThan(1);
    } finally {
      await admin.close();
    }
  }, 40_000);
});
