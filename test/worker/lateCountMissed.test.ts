import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Throttle, ThrottledWorker } from '../../src';
import { mostInAnyWindow } from '../../src/check/mostInAnyWindow';
import { ScriptRunner } from '../../src/lua/scripts';
import { LocalRedisServer, startLocalRedisServer } from '../../src/devRedis/localRedisServer';
import { capturingLogger, connectionFor, waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';
import { nowMs } from '../support/processorStart';

// A start past its deadline is counted longer (lua/countLateStart-n.lua) in time for any pause shorter than the
// window, or the rate's interval. A longer one cannot be undone: the worker counts it (startDeadline.countedTooLate)
// and says so in a warning, rather than leave a limit exceeded at processor start unseen.
describe('a late start counted longer too late', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let restoreRunner: () => void = () => undefined;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('lateCount');
  });
  afterEach(async () => {
    restoreRunner();
    restoreRunner = () => undefined;
    await bed.close(redis);
    await redis.quit();
  });

  /** The longer count reaches Redis `ms` after the processor returned (another process paused, or a slow network). */
  function delayLateCounts(ms: number): () => void {
    const run = ScriptRunner.prototype.run;
    ScriptRunner.prototype.run = async function (this: ScriptRunner, name, keys, args) {
      if (name === 'countLateStart' || name === 'countLateLeased') await new Promise((resolve) => setTimeout(resolve, ms));
      return run.call(this, name, keys, args);
    };
    return () => { ScriptRunner.prototype.run = run; };
  }

  /** Three jobs, one at a time; the first one's processor reaches its first line `stallMs` after its start check. */
  async function firstStalled(name: string, stallMs: number, throttle: Throttle, grantorUrl?: string) {
    const queue = bed.queue(name);
    const starts: number[] = [];
    const { logger, lines } = capturingLogger();
    const worker: ThrottledWorker = bed.worker(name, async (job: Job) => {
      const stallUntil = performance.now() + (job.data.i === 0 ? stallMs : 0);
      while (performance.now() < stallUntil) { /* the pause */ }
      starts.push(nowMs());
    }, { concurrency: 1, leaseMs: 20, throttles: [throttle], logger, ...(grantorUrl ? { grantor: { connection: connectionFor(grantorUrl) } } : {}) });
    await queue.addBulk([0, 1, 2].map((i) => ({ name: 'call', data: { i } })));
    await waitFor(() => starts.length === 3 && worker.startDeadline.countedTooLate > 0, 10_000, 'three starts, one counted too late');
    return { starts, worker, warnings: lines.filter((line) => line.level === 40).map((line) => line.msg), mode: lines.find((line) => line.delivery)?.delivery };
  }

  it('a rate whose next grant came before the count: counted and said', async () => {
    // rate(1, '500ms'): the next grant comes 520 ms after the first (T + h); the first job starts 300 ms after
    // its grant and its count lands some 700 ms later, after that grant. The second start comes about 220 ms
    // after the first: two in 500 ms, which the worker reports rather than hides.
    restoreRunner = delayLateCounts(700);
    const { starts, worker, warnings } = await firstStalled('rate', 300, Throttle.named('api').rate(1, '500ms'));
    expect(mostInAnyWindow(starts, 500)).toBe(2);
    expect(worker.startDeadline.countedLonger).toBe(1);
    expect(worker.startDeadline.countedTooLate).toBe(1);
    expect(warnings.filter((msg) => msg.includes('came too late for'))).toHaveLength(1);
    expect(warnings.find((msg) => msg.includes('came too late for'))).toMatch(/^a processor started \d+ ms after its delivery \(its deadline \d+ ms\), and counting it longer came too late for its limit/);
  });

  it('a window whose release passed before the start: counted and said, whether or not a grant came before the count', async () => {
    // limit(1, '200ms') counts the first job until 220 ms after its grant; it starts at 300 ms. Its count, landing
    // 700 ms later, finds the room its release gave back granted to the second job: two starts in 200 ms.
    restoreRunner = delayLateCounts(700);
    const late = await firstStalled('window', 300, Throttle.named('api').limit(1, '200ms'));
    expect(mostInAnyWindow(late.starts, 200)).toBe(2);
    expect(late.worker.startDeadline.countedTooLate).toBe(1);
    expect(late.warnings.filter((msg) => msg.includes('came too late for'))).toHaveLength(1);
    restoreRunner();
    restoreRunner = () => undefined;
    // Landing at once (the worker's own next delivery call comes after it), it counts the tokens again before any
    // grant: no two start in 200 ms. A window cannot tell whether its room was granted meanwhile: it is said too.
    const inTime = await firstStalled('window-in-time', 300, Throttle.named('api').limit(1, '200ms'));
    expect(mostInAnyWindow(inTime.starts, 200)).toBe(1);
    expect(inTime.worker.startDeadline.countedTooLate).toBe(1);
  });

  describe('leased delivery (a separate grantor)', () => {
    let grantorServer: LocalRedisServer;
    beforeAll(async () => { grantorServer = await startLocalRedisServer(); });
    afterAll(async () => { await grantorServer.stop(); });

    it('a window whose release passed at the grantor before the count: counted and said', async () => {
      // The grants the first job's tokens came from count until 220 ms after them; it starts at 300 ms, and
      // lua/countLateLeased-1.lua, landing 700 ms later, finds them released.
      restoreRunner = delayLateCounts(700);
      const { worker, warnings, mode } = await firstStalled('leased', 300, Throttle.named('api').limit(1, '200ms'), grantorServer.url);
      expect(mode).toBe('leased');
      expect(worker.startDeadline.countedTooLate).toBe(1);
      expect(warnings.filter((msg) => msg.includes('came too late for'))).toHaveLength(1);
    });
  });
});
