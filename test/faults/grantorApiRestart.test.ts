import IORedis from 'ioredis';
import { Grantor, Throttle } from '../../src';
import { SnapshotRedis } from '../support/snapshotRedis';

/**
 * Grantor.grant on a Redis restarted from an older snapshot: the grants counted after the snapshot are
 * forgotten, so every limit holds for its window after the restart (nothing else recorded them).
 */
describe('Grantor after a restart from an older snapshot', () => {
  let redis: SnapshotRedis;
  beforeEach(() => { redis = new SnapshotRedis(); });
  afterEach(() => redis.stop());

  it('grants nothing until the forgotten grants have left the window', async () => {
    const port = await redis.start();
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null, retryStrategy: () => 50 };
    const grantor = new Grantor({ connection, prefix: 'g' });
    const api = Throttle.named('api').limit(5, '2s');
    try {
      // The first grant records the node; the snapshot holds one grant of five.
      expect((await grantor.grant([[{ throttle: api }]]))[0].granted).toBe(true);
      const admin = new IORedis(connection);
      await admin.save();
      admin.disconnect();
      const burst = await grantor.grant(Array.from({ length: 4 }, () => [{ throttle: api }]));
      expect(burst.every((r) => r.granted)).toBe(true);
      await redis.restartFromSnapshot();
      // Restored: one grant counted. Without the hold, four more would fit now.
      const after = await grantor.grant([[{ throttle: api }]]);
      expect(after[0].granted).toBe(false);
      const { retryAt } = after[0] as { retryAt: number };
      const clock = new IORedis(connection);
      const [seconds, micros] = await clock.time();
      clock.disconnect();
      const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      expect(retryAt - nowMs).toBeGreaterThan(1_500);
      const granted = await grantor.wait([{ throttle: api }], { maxWaitMs: 5_000 });
      expect(granted.granted).toBe(true);
      // On the Redis clock: the next grant came once the forgotten burst had left the window.
      const burstAt = Math.max(...burst.map((r) => (r as { grantedAt: number }).grantedAt));
      expect((granted as { grantedAt: number }).grantedAt - burstAt).toBeGreaterThanOrEqual(2_000);
    } finally {
      await grantor.close();
    }
  }, 30_000);
});
