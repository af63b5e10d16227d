import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Throttle } from '../../src';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { newRedis } from '../support/redis';

// Issue 26: bullmq's job cancellation works with ThrottledWorker as with Worker. bullmq hands a processor an
// AbortSignal only when it declares a third parameter; cancelJob and cancelAllJobs abort it.
describe('job cancellation', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('cancel');
  });
  afterEach(async () => {
    await bed.close(redis);
    await redis.quit();
  });

  /** A processor that runs until its signal aborts, then fails with the reason. */
  function untilAborted(running: Set<string>, reasons: unknown[]) {
    return (job: Job, _token: string | undefined, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
      if (!signal) return resolve();
      running.add(job.id!);
      signal.addEventListener('abort', () => {
        reasons.push(signal.reason);
        reject(new Error(`cancelled: ${String(signal.reason)}`));
      });
    });
  }

  it('cancelJob aborts the processor\'s signal with the reason, and the job fails', async () => {
    const queue = bed.queue('cancel-one');
    const running = new Set<string>();
    const reasons: unknown[] = [];
    const worker = bed.worker('cancel-one', untilAborted(running, reasons), { concurrency: 2, throttles: [Throttle.named('api').limit(10, '1s')] });
    const failed: string[] = [];
    worker.on('failed', (job) => failed.push(job!.id!));
    const job = await queue.add('call', {});
    await waitFor(() => running.has(job.id!), 10_000, 'the processor to start');
    expect(worker.cancelJob(job.id!, 'user asked')).toBe(true);
    await waitFor(() => failed.includes(job.id!), 10_000, 'the job to fail');
    expect(reasons).toEqual(['user asked']);
    expect(await queue.getJobState(job.id!)).toBe('failed');
    expect((await queue.getJob(job.id!))!.failedReason).toBe('cancelled: user asked');
    expect(worker.cancelJob('no-such-job')).toBe(false);
  });

  it('cancelAllJobs aborts every running processor; jobs still held are not touched', async () => {
    const queue = bed.queue('cancel-all');
    const running = new Set<string>();
    const reasons: unknown[] = [];
    // Two may run at once: the third stays held in its bucket.
    const worker = bed.worker('cancel-all', untilAborted(running, reasons), { concurrency: 5, throttles: [Throttle.named('api').concurrency(2)] });
    const failed: string[] = [];
    worker.on('failed', (job) => failed.push(job!.id!));
    const jobs = await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }]);
    await waitFor(() => running.size === 2, 10_000, 'two processors to start');
    worker.cancelAllJobs('shutting down');
    await waitFor(() => failed.length === 2, 10_000, 'both to fail');
    expect(reasons).toEqual(['shutting down', 'shutting down']);
    // Their concurrency returned: the held job runs next, and is not cancelled.
    await waitFor(() => running.size === 3, 10_000, 'the third to start');
    const third = jobs.find((j) => !failed.includes(j.id!))!;
    expect(worker.cancelJob(third.id!)).toBe(true);
    await waitFor(() => failed.length === 3, 10_000, 'the third to fail once cancelled');
  });
});
