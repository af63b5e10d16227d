import { Redis } from 'ioredis';
import { Throttle, ThrottleKeys } from '../../src';
import { watchDeliveryCalls } from '../support/deliveryCalls';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * Workers waiting on one full bucket are told different moments to look again, one room return apart
 * (lua/includes/wakeClaims.lua), so that a bucket shared by many queues costs one call each time its room returns.
 */
describe('wake claims: one caller per room return', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let restoreRunner: () => void = () => undefined;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('wakeclaims');
  });
  afterEach(async () => {
    restoreRunner();
    await bed.close(redis);
    await redis.quit();
  });

  it('workers of four queues sharing a full bucket are told distinct moments, at least a window slot apart, and the bucket stays exact', async () => {
    const names = ['a', 'b', 'c', 'd'];
    for (const name of names) await bed.queue(name).addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'n', data: { i } })));
    // The moments handed out by calls that delivered nothing and were told to wait for room (Redis time, us).
    const told: number[] = [];
    // The latest moment handed out, as the key holds it after each such call.
    const claimKey = new ThrottleKeys(bed.prefix).wakeClaim('shared-claims', '-');
    const claimed: number[] = [];
    restoreRunner = watchDeliveryCalls({
      async replied(reply) {
        const [nowUs, nextWakeUs, , , , , , more, delivered] = reply.map(Number);
        if (delivered === 0 && more === 0 && nextWakeUs > nowUs) {
          told.push(nextWakeUs);
          claimed.push(Number(await redis.get(claimKey)));
        }
      },
    });
    const starts: number[] = [];
    const throttles = [Throttle.named('shared-claims').limit(3, '200ms')];
    // leaseMs 0: no start deadline. On a loaded machine deliveries that start late go back, and each put-back wakes
    // the waiting slots to ask again at once: enough asks in one round use up the claims' 50 ms spread, and the
    // round starts again at the room's return, a moment told before (two rehearsal runs, bullmq 5.81.5 and 6.0.0).
    for (const name of names) bed.worker(name, async (job) => { starts.push(job.processedOn!); }, { concurrency: 5, leaseMs: 0, throttles });
    await waitFor(() => starts.length >= 9, 10_000, 'three rounds of the bucket');
    expect(told.length).toBeGreaterThanOrEqual(4);
    // The key names a moment handed out (read after the call: a later one may have moved it on, and once its
    // moment has passed it is gone).
    expect(claimed.some((at) => at > 0)).toBe(true);
    // A 200 ms window's slot: 200,000 us / 220, whole us. The first moments told: after 50 ms of them (55 slots) a
    // round starts again at the room's return, which a loaded machine's re-asks can reach (a CI rehearsal did).
    const slotUs = Math.floor(200_000 / 220);
    const sorted = told.slice(0, 8).sort((x, y) => x - y);
    const tooClose = sorted.slice(1).filter((at, i) => at - sorted[i] < slotUs);
    // On failure the moments told, in the order told, and the claims read after them say which round restarted.
    expect({ tooClose, told, claimed }).toMatchObject({ tooClose: [] });
    const byTime = [...starts].sort((x, y) => x - y);
    for (let i = 3; i < byTime.length; i++) expect(byTime[i] - byTime[i - 3]).toBeGreaterThanOrEqual(200);
  });
});
