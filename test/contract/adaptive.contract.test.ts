import { RetryAfterError, SlowDownError, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { describeEachMode, processNowMs, recordingProcessor, Start, useContractBed } from './contractSuite';

// Adaptive limits (Throttle.adaptive, issue 30 item 3): a 429 from the API (SlowDownError, RetryAfterError) lowers
// the live limit of the job's bucket, each window without one raises it back, and every grant is held to the live
// limit at its moment. A window ending at a start counts deliveries granted up to W (+ h, where processors start)
// before it: once that reaches past the lowering, the window holds the live limit in force at its end.
describeEachMode('contract: adaptive limits', (mode) => {
  const bed = useContractBed('adaptive', mode);
  const W = 400;

  /** The starts within the window of length W ending at each start, over `times`. */
  const countsEndingAt = (times: readonly number[]) => times.map((end) => ({ end, count: times.filter((t) => t > end - W && t <= end).length }));

  it('a SlowDownError cuts the bucket\'s window limit, which climbs back a step a window; every window holds the limit in force', async () => {
    const queue = bed().queue('slow');
    await queue.addBulk(Array.from({ length: 70 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    let signalledAt: number | undefined;
    const api = Throttle.named('api').limit(8, W).adaptive({ min: 2, decrease: 0.25, increase: 1 });
    const worker = bed().worker('slow', recordingProcessor(starts, (job) => {
      if (job.data.i === 12 && signalledAt === undefined) {
        signalledAt = processNowMs();
        throw new SlowDownError();
      }
      return undefined;
    }), { concurrency: 8, throttles: [api] });
    await worker.waitUntilReady();
    await waitFor(async () => (await bed().admin.throttleBucket('api')).adaptive?.loweredAt != null, 20_000, 'the limit lowered');
    const lowered = (await bed().admin.throttleBucket('api')).adaptive!;
    expect(lowered).toMatchObject({ target: W, ceiling: 8, min: 2 });
    const loweredAt = lowered.loweredAt!;
    await waitFor(() => starts.length >= 71, 30_000, 'every job started');
    // Two windows without a 429 raised it back to its ceiling.
    await waitFor(async () => (await bed().admin.throttleBucket('api')).adaptive?.live === 8, 5_000, 'the limit back at its ceiling');
    await worker.close();

    // Live limit at t: 2 from the lowering, 1 more each window since, up to 8.
    const liveAt = (t: number, from: number) => Math.min(8, 2 + Math.floor(Math.max(0, t - from) / W));
    const granted = starts.map((s) => s.processedOn);
    for (const { end, count } of countsEndingAt(granted)) {
      if (end >= loweredAt + W + mode.hMs) expect({ end, count }).toEqual({ end, count: Math.min(count, liveAt(end, loweredAt)) });
      expect(count).toBeLessThanOrEqual(8);
    }
    // Where processors start: each up to h after its grant; the lowering came after the signal was thrown.
    const started = starts.map((s) => s.at);
    for (const { end, count } of countsEndingAt(started)) {
      if (end >= signalledAt! + W + 2 * mode.hMs) expect({ end, count }).toEqual({ end, count: Math.min(count, liveAt(end, signalledAt!)) });
      expect(count).toBeLessThanOrEqual(8);
    }
    // The limit was in force: at most 2 in the window right after the lowering (h late), more once raised.
    const after = granted.filter((t) => t >= loweredAt + mode.hMs);
    expect(after.filter((t) => t < loweredAt + W).length).toBeLessThanOrEqual(2);
    expect(countsEndingAt(granted.filter((t) => t >= loweredAt + 4 * W)).some(({ count }) => count > 4)).toBe(true);
  });

  it('a RetryAfterError pauses the bucket and lowers its adaptive rate; the rate it resumes at is the lowered one', async () => {
    const queue = bed().queue('retry');
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    let thrown = false;
    const partner = Throttle.named('partner').rate(20, '1s', { burst: 4 }).adaptive({ min: 5, increase: 1 });
    const worker = bed().worker('retry', recordingProcessor(starts, (job) => {
      if (job.data.i === 3 && !thrown) {
        thrown = true;
        throw new RetryAfterError(1000);
      }
      return undefined;
    }), { concurrency: 4, throttles: [partner] });
    await worker.waitUntilReady();
    await waitFor(async () => (await bed().admin.throttleBucket('partner')).adaptive?.loweredAt != null, 20_000, 'the rate lowered');
    const bucket = await bed().admin.throttleBucket('partner');
    expect(bucket.adaptive).toMatchObject({ target: 'rate', live: 10, ceiling: 20, min: 5 });
    expect(bucket.rate?.n).toBe(10);
    const loweredAt = bucket.adaptive!.loweredAt!;
    const pausedUntil = bucket.paused!.until!;
    await waitFor(() => starts.length >= 41, 30_000, 'every job started');
    await worker.close();
    const granted = starts.map((s) => s.processedOn);
    // Paused: nothing granted (leased: nothing but tokens granted before, spent within h).
    expect(granted.filter((t) => t >= loweredAt + mode.hMs && t < pausedUntil).length).toBe(0);
    // Then the lowered rate, 10 a second and one more for each second without a 429, with its burst of 4: in any
    // second, at most 4 and the live rate at its end (the declared 20 would allow 24).
    const resumed = granted.filter((t) => t >= pausedUntil);
    for (const end of resumed) {
      const count = resumed.filter((t) => t > end - 1000 && t <= end).length;
      expect({ end, count }).toEqual({ end, count: Math.min(count, 4 + 10 + Math.floor((end - loweredAt) / 1000)) });
    }
    expect(resumed.length).toBeGreaterThan(0);
  });
});
