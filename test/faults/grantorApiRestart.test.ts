import IORedis from 'ioredis';
import { Grantor, mostInAnyWindow, Throttle } from '../../src';
import { SnapshotRedis } from '../support/snapshotRedis';
import { TestClock } from '../support/testClock';

/**
 * Grantor.grant on a Redis restarted from an older snapshot: the grants counted after the snapshot are
 * forgotten by the node, but the Grantor that made them remembers them (src/grant/grantMemory.ts) and tells the
 * namespace's gather (lua/includes/grantorRecovery.lua): grants resume within a second, never more than N in any
 * window. Only the throttles of a Grantor that is gone hold for their longest window.
 */
describe('Grantor after a restart from an older snapshot', () => {
  let redis: SnapshotRedis;
  const grantors: Grantor[] = [];
  beforeEach(() => { redis = new SnapshotRedis(); });
  afterEach(async () => {
    await Promise.all(grantors.splice(0).map((grantor) => grantor.close()));
    await redis.stop();
  });

  async function started(): Promise<{ connection: object; save: () => Promise<void> }> {
    const port = await redis.start();
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const save = async () => {
      const admin = new IORedis(connection);
      await admin.save();
      admin.disconnect();
    };
    return { connection, save };
  }

  function grantorOn(connection: object, clock?: TestClock): Grantor {
    const grantor = new Grantor({ connection, prefix: 'g' }, clock?.internals());
    grantors.push(grantor);
    return grantor;
  }

  const grantedAt = (results: readonly { granted: boolean }[]) => results.flatMap((r) => ('grantedAt' in r ? [r.grantedAt as number] : []));

  it('counts the forgotten grants again from the Grantor\'s memory: never more than N in any window', async () => {
    const { connection, save } = await started();
    const grantor = grantorOn(connection);
    const api = Throttle.named('api').limit(5, '2s');
    // The first grant records the node; the snapshot holds one grant of five.
    const times = grantedAt(await grantor.grant([[{ throttle: api }]]));
    expect(times).toHaveLength(1);
    await save();
    const burst = await grantor.grant(Array.from({ length: 4 }, () => [{ throttle: api }]));
    expect(burst.every((r) => r.granted)).toBe(true);
    times.push(...grantedAt(burst));
    await redis.restartFromSnapshot();
    // Restored: one grant counted. Without the gather, four more would fit now.
    const after = await grantor.grant(Array.from({ length: 4 }, () => [{ throttle: api }]));
    expect(after.some((r) => r.granted)).toBe(false);
    const deadline = Date.now() + 5_000;
    while (times.length < 10 && Date.now() < deadline) {
      const result = await grantor.wait([{ throttle: api }], { maxWaitMs: deadline - Date.now() });
      // Refused: the deadline passed, or room comes only after it.
      if (!result.granted) break;
      times.push(...grantedAt([result]));
    }
    expect(times).toHaveLength(10);
    expect(mostInAnyWindow(times, 2_000)).toBeLessThanOrEqual(5);
  }, 30_000);

  it('resumes within a second for a limit of an hour, and grants what is left of N, no more', async () => {
    const { connection, save } = await started();
    const grantor = grantorOn(connection);
    const hourly = Throttle.named('hourly').limit(10, '1h');
    expect((await grantor.grant([[{ throttle: hourly }]]))[0].granted).toBe(true);
    await save();
    const burst = await grantor.grant(Array.from({ length: 5 }, () => [{ throttle: hourly }]));
    expect(burst.every((r) => r.granted)).toBe(true);
    await redis.restartFromSnapshot();
    const restartedAt = Date.now();
    // Before the Grantor vouched for its grants, the namespace held for the hour here.
    const next = await grantor.wait([{ throttle: hourly }], { maxWaitMs: 10_000 });
    expect(next.granted).toBe(true);
    process.stderr.write(`granted again ${Date.now() - restartedAt} ms after the restart\n`);
    // Six before the restart and one now: three of the hour's ten are left, less one: the grant the snapshot
    // kept is counted again too (the node cannot tell it from the five it forgot; the safe direction).
    const { ids } = await grantor.grantAvailable([{ throttle: hourly }], 10);
    expect(ids).toHaveLength(2);
  }, 30_000);

  it('holds only the throttles of a Grantor that is gone, for their longest window', async () => {
    const { connection, save } = await started();
    const clock = new TestClock();
    const gone = grantorOn(connection, clock);
    const live = grantorOn(connection, clock);
    const ofGone = Throttle.named('of-gone').limit(10, '1h');
    const ofLive = Throttle.named('of-live').limit(10, '1h');
    expect((await gone.grant([[{ throttle: ofGone }]]))[0].granted).toBe(true);
    expect((await live.grant([[{ throttle: ofLive }]]))[0].granted).toBe(true);
    await save();
    // The gone one's process ends: nobody remembers its grants but the node, which is about to forget them.
    await gone.close();
    await redis.restartFromSnapshot();
    const first = await live.grant([[{ throttle: ofLive }]]);
    expect(first[0].granted).toBe(false);
    // The gather waits for the gone Grantor (the snapshot names it) until its time passes (7 s by default).
    clock.advance(8_000);
    const resumed = await live.wait([{ throttle: ofLive }], { maxWaitMs: 5_000 });
    expect(resumed.granted).toBe(true);
    const held = await live.grant([[{ throttle: ofGone }]]);
    expect(held[0].granted).toBe(false);
    const { retryAt } = held[0] as { retryAt: number };
    // Held for its hour from the hold's start: on the test clock, about 8 s have passed since.
    expect(retryAt - (resumed as { grantedAt: number }).grantedAt).toBeGreaterThan(3_590_000);
  }, 30_000);
});
