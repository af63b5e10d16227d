import { Redis } from 'ioredis';
import { Throttle } from '../../src';
import { watchDeliveryCalls } from '../support/deliveryCalls';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

/**
 * bullmq's main loop fetches for its free slots one after another and starts what it fetched only once it stops
 * fetching; a ThrottledWorker's delivery calls take longer than bullmq's moveToActive, so jobs waited there past
 * their start deadline (src/worker/slots/slotRequests.ts, submit). A job the main loop fetched is started before the
 * loop's next delivery call goes out.
 */
describe('bullmq main loop: fetched jobs start before the next fetch', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let restoreRunner: () => void = () => undefined;
  // Processors that never end until released: no completion fetches, every delivery is a main-loop fetch.
  let release: () => void = () => undefined;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('mainloop');
  });
  afterEach(async () => {
    restoreRunner();
    release();
    await bed.close(redis);
    await redis.quit();
  });

  it('each delivery call of the main loop goes out once the jobs of the calls before it have started', async () => {
    const queue = bed.queue('refill');
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'n', data: { i } })));
    let started = 0;
    let delivered = 0;
    const released = new Promise<void>((resolve) => { release = resolve; });
    // At each delivery call: how many jobs the calls before it delivered, and how many processors had started.
    const atCalls: { delivered: number; started: number }[] = [];
    restoreRunner = watchDeliveryCalls({
      sent: () => { atCalls.push({ delivered, started }); },
      replied: (reply) => { delivered += Number(reply[8]); },
    });
    const worker = bed.worker('refill', async () => { started++; await released; }, {
      concurrency: 10, throttles: [Throttle.named('roomy-refill').limit(1000, '1s')],
    });
    let drained = 0;
    worker.on('drained', () => { drained++; });
    await waitFor(() => started === 10, 10_000, 'ten processors started');
    expect(delivered).toBe(10);
    for (const call of atCalls) expect(call.started).toBe(call.delivered);
    // The main loop was told to start what it held (a pass) rather than that the queue ran dry: no 'drained'.
    expect(drained).toBe(0);
    release();
    await waitFor(async () => (await queue.getCompletedCount()) === 30, 10_000, 'all 30 completed');
    await waitFor(() => drained > 0, 10_000, "'drained' once the queue runs dry");
  });
});
