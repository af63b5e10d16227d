import { Job } from 'bullmq';
import { Key, mostInAnyWindow, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { mostAtOnce } from '../support/inFlight';
import { describeEachMode, recordingProcessor, sleep, Start, useContractBed } from './contractSuite';

// Concurrency: at most n jobs of a bucket between delivery and their end, across every worker and queue sharing
// the throttle; an end (completion, failure, retry) gives its slot back.
describeEachMode('contract: concurrency', (mode) => {
  const bed = useContractBed('cconc', mode);

  it('at most n per key in flight across two workers on two queues, from processedOn to finishedOn and as the processors ran', async () => {
    const perDomain = Throttle.named('scraper').key([Key.data('domain')]).concurrency(2);
    const starts: Start[] = [];
    const processor = recordingProcessor(starts, (job: Job) => sleep(10 + ((Number(job.id) * 13) % 40)));
    const queues = ['pages-a', 'pages-b'].map((name) => bed().queue(name));
    for (const queue of queues) {
      await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'page', data: { domain: i % 2 ? 'a.example' : 'b.example' } })));
      bed().worker(queue.name, processor, { concurrency: 4, throttles: [perDomain] });
    }
    await waitFor(async () => (await Promise.all(queues.map((q) => q.getCompletedCount()))).every((n) => n === 12), 30_000, 'every job completed');
    const jobs = (await Promise.all(queues.map((q) => q.getJobs(['completed'], 0, -1)))).flat();
    for (const domain of ['a.example', 'b.example']) {
      expect(mostAtOnce(jobs.filter((j) => j.data.domain === domain).map((j) => ({ from: j.processedOn!, to: j.finishedOn! })))).toBeLessThanOrEqual(2);
      expect(mostAtOnce(starts.filter((s) => s.data.domain === domain).map((s) => ({ from: s.at, to: s.endedAt! })))).toBeLessThanOrEqual(2);
    }
  });

  it('failures and retries give their slot back at once: with concurrency 1 every attempt runs, one at a time', async () => {
    const single = Throttle.named('one-at-a-time').concurrency(1);
    const queue = bed().queue('flaky');
    const starts: Start[] = [];
    bed().worker('flaky', recordingProcessor(starts, async (job: Job) => {
      await sleep(10);
      if (job.data.fails && job.attemptsMade < 1) throw new Error('try again');
    }), { concurrency: 4, throttles: [single] });
    await queue.addBulk([
      ...Array.from({ length: 4 }, () => ({ name: 'fails', data: { fails: true }, opts: { attempts: 2 } })),
      ...Array.from({ length: 4 }, () => ({ name: 'plain', data: {} })),
    ]);
    await waitFor(async () => (await queue.getCompletedCount()) === 8, 30_000, 'every job completed');
    // 4 x 2 attempts + 4: a slot lost to a failure would stall the rest.
    expect(starts).toHaveLength(12);
    expect(mostAtOnce(starts.map((s) => ({ from: s.at, to: s.endedAt! })))).toBe(1);
  });

  it('beside a window limit: a delivery needs room in both', async () => {
    const stripe = Throttle.named('stripe').limit(4, 400).concurrency(2);
    const queue = bed().queue('payments');
    await queue.addBulk(Array.from({ length: 12 }, () => ({ name: 'charge', data: {} })));
    const starts: Start[] = [];
    bed().worker('payments', recordingProcessor(starts, () => sleep(20)), { concurrency: 6, throttles: [stripe] });
    await waitFor(async () => (await queue.getCompletedCount()) === 12, 30_000, 'every job completed');
    const jobs = await queue.getJobs(['completed'], 0, -1);
    expect(mostAtOnce(jobs.map((j) => ({ from: j.processedOn!, to: j.finishedOn! })))).toBeLessThanOrEqual(2);
    expect(mostAtOnce(starts.map((s) => ({ from: s.at, to: s.endedAt! })))).toBeLessThanOrEqual(2);
    expect(mostInAnyWindow(starts.map((s) => s.at), 400)).toBeLessThanOrEqual(4);
    expect(mostInAnyWindow(jobs.map((j) => j.processedOn!), 400)).toBeLessThanOrEqual(4);
  });
});
