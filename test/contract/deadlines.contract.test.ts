import { Job, QueueEvents } from 'bullmq';
import { Throttle, ThrottleWaitTimeoutError } from '../../src';
import { connectionFor, waitFor } from '../support/bullmq';
import { describeEachMode, recordingProcessor, sleep, Start, useContractBed } from './contractSuite';

// Deadlines on waiting (Throttle.maxWait, issue 30 item 2): a job that cannot go within its throttle's maxWait fails
// with ThrottleWaitTimeoutError (no retry, its processor never runs): at once where its bucket's backlog and limits
// already say so (exact delivery, where the counters are in reach), else when it has waited that long; and no job is
// delivered to run after its deadline.
describeEachMode('contract: deadlines on waiting', (mode) => {
  const bed = useContractBed('deadlines', mode);

  it('maxWait 3 s on 5 a second, 60 jobs added at once: what cannot go in time fails, none runs later than 3 s after it could first have gone', async () => {
    const queue = bed().queue('burst');
    const jobs = await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'call', data: { i }, opts: { attempts: 3 } })));
    const starts: Start[] = [];
    const failures: { id: string; error: Error; at: number }[] = [];
    const api = Throttle.named('api').limit(5, '1s').maxWait('3s');
    const worker = bed().worker('burst', recordingProcessor(starts), { concurrency: 5, throttles: [api] });
    worker.on('failed', (job, error) => failures.push({ id: job!.id!, error, at: Date.now() }));
    await waitFor(() => starts.length + failures.length >= 60, 20_000, 'every job run or failed');
    await sleep(200);
    await worker.close();

    // Every job either ran once or failed without running, with the throttle's timeout.
    expect(starts.length + failures.length).toBe(60);
    expect(new Set([...starts.map((s) => s.id), ...failures.map((f) => f.id)]).size).toBe(60);
    for (const failure of failures) expect(failure.error).toBeInstanceOf(ThrottleWaitTimeoutError);
    // The window lets 5 go a second: at most 4 windows' worth start within 3 s.
    expect(starts.length).toBeGreaterThanOrEqual(10);
    expect(starts.length).toBeLessThanOrEqual(20);
    // None ran later than 3 s after the first delivery call looked at the jobs (when each could first have gone;
    // the call that files the last of them comes within moments of it).
    const firstLook = Math.min(...starts.map((s) => s.processedOn));
    const fileSpreadMs = 150;
    for (const start of starts) expect(start.processedOn - firstLook).toBeLessThanOrEqual(3_000 + fileSpreadMs);
    // Failed for good: one attempt (bullmq's UnrecoverableError), the reason naming the throttle and its bucket.
    const failed = await Promise.all(failures.map((f) => Job.fromId(queue, f.id)));
    for (const job of failed) {
      expect(await job!.getState()).toBe('failed');
      expect(job!.attemptsMade).toBe(1);
      expect(job!.failedReason).toMatch(/in throttle 'api' \(its one bucket\)/);
    }
    const added = Math.min(...jobs.map((j) => j.timestamp));
    if (mode.name === 'exact') {
      // Its backlog and the window say at once that the later ones cannot go in time: they fail within a second.
      const atOnce = failed.filter((job) => job!.finishedOn! - added < 1_000);
      expect(atOnce.length).toBeGreaterThanOrEqual(failed.length - 10);
      expect(atOnce[0]!.failedReason).toMatch(/would wait about \d+ ms in throttle 'api' \(its one bucket\) by its backlog and limits, longer than its maxWait of 3000 ms: failed at once/);
    } else {
      // Leased, the queue's slot does not hold the limits: each fails when it has waited 3 s.
      for (const job of failed) expect(job!.failedReason).toMatch(/waited \d+ ms in throttle 'api' \(its one bucket\), its maxWait is 3000 ms/);
    }
  });

  it('a job that waits its maxWait on a concurrency (no estimate) fails then, unrun; QueueEvents hears it; one retried by hand runs', async () => {
    const queue = bed().queue('slow');
    const events = new QueueEvents('slow', { connection: connectionFor(), prefix: bed().prefix });
    const heard: string[] = [];
    events.on('failed', ({ jobId }) => heard.push(jobId));
    await events.waitUntilReady();
    const starts: Start[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const pool = Throttle.named('pool').concurrency(1).maxWait(400);
    const worker = bed().worker('slow', recordingProcessor(starts, async (job) => { if (job.data.first) await gate; }), { concurrency: 3, throttles: [pool] });
    await worker.waitUntilReady();
    const [first] = await queue.addBulk([{ name: 'first', data: { first: true } }]);
    await waitFor(() => starts.length === 1, 10_000, 'the first running');
    const waiting = await queue.addBulk([{ name: 'second', data: {} }, { name: 'third', data: {} }]);
    await waitFor(async () => (await Promise.all(waiting.map((j) => j.getState()))).every((s) => s === 'failed'), 10_000, 'the two waiting failed');
    const failed = await Promise.all(waiting.map((j) => Job.fromId(queue, j.id!)));
    for (const job of failed) {
      // Failed when its 400 ms were up (not before), while the first still ran.
      expect(job!.finishedOn! - job!.timestamp).toBeGreaterThanOrEqual(400);
      expect(job!.failedReason).toMatch(/^job \S+ waited \d+ ms in throttle 'pool' \(its one bucket\), its maxWait is 400 ms: failed$/);
    }
    expect(starts.map((s) => s.id)).toEqual([first.id]);
    await waitFor(() => heard.length === 2, 5_000, 'QueueEvents to hear both failures');
    release();
    // Retried by hand once the pool is free: it runs (its old mark is of another delivery).
    await waitFor(async () => (await first.getState()) === 'completed', 10_000, 'the first completed');
    await failed[0]!.retry('failed');
    await waitFor(() => starts.length === 2, 10_000, 'the retried job running');
    expect(starts[1].id).toBe(waiting[0].id);
    await worker.close();
    await events.close();
  });

  it('explainJob gives a waiting job its deadline', async () => {
    const queue = bed().queue('explained');
    const starts: Start[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const worker = bed().worker('explained', recordingProcessor(starts, async () => gate), { concurrency: 2, throttles: [Throttle.named('pool').concurrency(1).maxWait('1m')] });
    await worker.waitUntilReady();
    await queue.add('first', {});
    await waitFor(() => starts.length === 1, 10_000, 'the first running');
    const second = await queue.add('second', {});
    await waitFor(async () => (await bed().admin.explainJob('explained', second.id!)).held === 'waiting-on-bucket', 10_000, 'the second held');
    const explained = await bed().admin.explainJob('explained', second.id!);
    expect(explained.deadline! - explained.at).toBeGreaterThan(50_000);
    expect(explained.deadline! - explained.at).toBeLessThanOrEqual(60_000);
    expect(explained.reason).toMatch(/; it fails in [^;]+ unless it goes before \(maxWait\)$/);
    release();
    await worker.close();
  });
});
