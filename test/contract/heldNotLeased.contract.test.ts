import { getThrottledCount, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { describeEachMode, recordingProcessor, sleep, Start, useContractBed } from './contractSuite';

// Held, not leased: a job that cannot go stays in Redis with no lock, no attempt (attemptsMade, attemptsStarted),
// no processedOn and no `active` event; the processor only receives jobs that fit. Every path by which bullmq hands
// out a job is gated: the worker's fetch, and fetch-next after a completion, a failure or a retry.
describeEachMode('contract: held, not leased', (mode) => {
  const bed = useContractBed('cheld', mode);

  it('a job that cannot go has no lock, no attempt, no processedOn, no active event, and is not active', async () => {
    const queue = bed().queue('held');
    const added = await queue.addBulk([1, 2, 3, 4].map((i) => ({ name: 'n', data: { i } })));
    const starts: Start[] = [];
    bed().worker('held', recordingProcessor(starts), { concurrency: 4, throttles: [Throttle.named('hourly').limit(1, '1h')] });
    await waitFor(() => starts.length === 1, 20_000, 'one delivery');
    await sleep(400);
    expect(starts.map((s) => s.id)).toEqual([added[0].id]);
    const events = await bed().redis.xrange(`${bed().prefix}:held:events`, '-', '+');
    // (A job put back for starting late shows one more 'active' than it ran: docs/getting-started.md.)
    expect([...new Set(events.filter(([, fields]) => fields[1] === 'active').map(([, fields]) => fields[3]))]).toEqual([added[0].id]);
    for (const job of added.slice(1)) {
      expect(await bed().redis.exists(`${bed().prefix}:held:${job.id}:lock`)).toBe(0);
      const [ats, atm, processedOn] = await bed().redis.hmget(`${bed().prefix}:held:${job.id}`, 'ats', 'atm', 'processedOn');
      expect({ ats, atm, processedOn }).toEqual({ ats: null, atm: null, processedOn: null });
      const fresh = (await queue.getJob(job.id!))!;
      expect({ attemptsMade: fresh.attemptsMade, attemptsStarted: fresh.attemptsStarted ?? 0 }).toEqual({ attemptsMade: 0, attemptsStarted: 0 });
      // Held outside bullmq's lists ('unknown' to getState: docs/bullmq-compatibility.md), or still first in wait.
      expect(['waiting', 'unknown']).toContain(await fresh.getState());
      expect(['held', 'waiting']).toContain((await bed().admin.explainJob('held', job.id!)).state);
    }
    // Every job accounted for: bullmq's counts plus the throttled.
    const counts = await queue.getJobCounts();
    expect(Object.values(counts).reduce((a, b) => a + b, 0) + (await getThrottledCount(queue)).throttled).toBe(4);
    expect(counts.active).toBe(0);
  });

  it('fetch-next after a completion, a failure and a retry is gated: with 2 per hour the processor runs exactly twice', async () => {
    const queue = bed().queue('paths');
    const starts: Start[] = [];
    // One slot: each job after the first is fetched with the previous one's completion or failure.
    bed().worker('paths', recordingProcessor(starts, (job) => {
      if (job.data.fails) throw new Error('fails every time');
    }), { concurrency: 1, throttles: [Throttle.named('hourly').limit(2, '1h')] });
    const fails = await queue.add('fails', { fails: true }, { attempts: 5 });
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'plain', data: { i } })));
    await waitFor(() => starts.length === 2, 20_000, 'two deliveries');
    await sleep(600);
    expect(starts).toHaveLength(2);
    const counts = await queue.getJobCounts();
    expect(counts.active).toBe(0);
    expect(Object.values(counts).reduce((a, b) => a + b, 0) + (await getThrottledCount(queue)).throttled).toBe(4);
    // The job whose attempt failed made no other attempt than those the throttle let go.
    const failing = (await queue.getJob(fails.id!))!;
    expect(failing.attemptsMade).toBe(starts.filter((s) => s.name === 'fails').length);
  });
});
