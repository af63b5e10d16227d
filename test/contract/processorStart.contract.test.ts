import { Job } from 'bullmq';
import { mostInAnyWindow, Throttle, ThrottledWorker, ThrottleKeys } from '../../src';
import { waitFor } from '../support/bullmq';
import { describeEachMode, recordingProcessor, Start, useContractBed } from './contractSuite';

// Processor start: the guarantee holds where the API sees it. A job whose processor would start after its deadline
// (exact: 9/10 of h after its delivery call; leased: its tokens' expiry) does not start: it goes back held, with no
// attempt made and its room given back, and runs later. Each processor runs once per job.
describeEachMode('contract: processor start', (mode) => {
  const bed = useContractBed('cstart', mode);

  /** Holds the event loop for `ms` at the start of each processor: the starts queued behind it come late. */
  const busyFor = (ms: number) => () => {
    const until = performance.now() + ms;
    while (performance.now() < until) { /* busy */ }
  };

  it('a busy event loop: jobs that would start late go back held without an attempt, and the starts stay within the limit', async () => {
    const N = 12;
    const W = 500;
    const queue = bed().queue('busy');
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    const worker: ThrottledWorker = bed().worker('busy', recordingProcessor(starts, busyFor(15)), {
      concurrency: N, leaseMs: 30, throttles: [Throttle.named('api').limit(N, W)],
    });
    const failed: string[] = [];
    worker.on('failed', (job) => failed.push(job?.id ?? '?'));
    await waitFor(async () => (await queue.getCompletedCount()) === 30, 60_000, 'every job completed');
    // N delivered at once, each start holding the loop 15 ms: most would start well after h = 30 ms.
    expect(worker.startDeadline.putBack).toBeGreaterThan(0);
    expect(failed).toEqual([]);
    expect(starts).toHaveLength(30);
    expect(new Set(starts.map((s) => s.id)).size).toBe(30);
    expect((await queue.getCompleted(0, 29)).every((job) => job.attemptsMade === 1)).toBe(true);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(N);
  });

  it('a start held up past h: the jobs delivered with it do not start late, and no window of W sees more than N starts', async () => {
    const N = 4;
    const W = 300;
    const queue = bed().queue('held-up');
    await queue.addBulk(Array.from({ length: 16 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    // The first start of the second window (exact delivery serves the N slots waiting for room in one call) holds the
    // event loop 250 ms: the others delivered with it would start long after h. Started anyway (counted when
    // delivered), they would share a window with the N delivered when room returns next. (Leased delivery tends to
    // serve those slots one call at a time, as its tokens come: then none is late, and this checks only the bound.)
    bed().worker('held-up', recordingProcessor(starts, () => { if (starts.length === N + 1) busyFor(250)(); }), {
      concurrency: N, leaseMs: 30, throttles: [Throttle.named('api').limit(N, W)],
    });
    await waitFor(async () => (await queue.getCompletedCount()) === 16, 30_000, 'every job completed');
    expect(new Set(starts.map((s) => s.id)).size).toBe(16);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(N);
  });

  it('a job put back for starting late gives back its room: a limit of 3 per hour still runs 3', async () => {
    const queue = bed().queue('hourly');
    await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    bed().worker('hourly', recordingProcessor(starts, busyFor(60)), { concurrency: 3, leaseMs: 30, throttles: [Throttle.named('api').limit(3, '1h')] });
    await waitFor(async () => (await queue.getCompletedCount()) === 3, 30_000, 'all 3 completed within the hour\'s 3');
    expect(starts).toHaveLength(3);
    if (mode.name === 'leased') {
      // The queue's history (what a grantor that lost its counts counts again) holds the 3 that started, not the
      // put-backs too: counted again after a restart, those would hold the bucket for the hour.
      const history = `${new ThrottleKeys(bed().prefix).queue('hourly').base}:h:3600000/api=-`;
      await waitFor(async () => Number((await bed().redis.hget(history, 'h'))?.split(' ')[0]) === 3, 5_000, 'the history of the 3 that started');
    }
  });

  it('a put-back takes back the start bullmq counted: attemptsStarted counts only the runs', async () => {
    const queue = bed().queue('started');
    await queue.addBulk(['a', 'b'].map((name) => ({ name, data: {}, opts: { attempts: 3 } })));
    let runs = 0;
    // The first start holds the loop past the other's deadline; each job fails its first run and passes its second.
    bed().worker('started', async (job: Job) => {
      busyFor(++runs === 1 ? 80 : 0)();
      if (job.attemptsMade === 0) throw new Error('the first run fails');
    }, { concurrency: 2, leaseMs: 30, maxStartedAttempts: 2, throttles: [Throttle.named('two').limit(2, 400)] });
    await waitFor(async () => (await queue.getCompletedCount()) + (await queue.getFailedCount()) === 2, 30_000, 'both jobs ended');
    const jobs = await queue.getCompleted(0, 1);
    expect(jobs.map((job) => ({ name: job.name, attemptsMade: job.attemptsMade, attemptsStarted: job.attemptsStarted })).sort((x, y) => x.name.localeCompare(y.name)))
      .toEqual([{ name: 'a', attemptsMade: 2, attemptsStarted: 2 }, { name: 'b', attemptsMade: 2, attemptsStarted: 2 }]);
  });
});
