import { Key, mostInAnyWindow, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { describeEachMode, processNowMs, recordingProcessor, Start, useContractBed } from './contractSuite';

// Overrides (ThrottleAdmin.setLimits / clearLimits): the limits in force instead of the declared ones, for a throttle
// or one bucket, from the next grant of every worker on. What was granted before a change may still be delivered
// (leased: spent from a pool) or start up to h after it, so a new N holds in every window that starts h after the
// change; the one in force before holds until then.
describeEachMode('contract: overrides', (mode) => {
  const bed = useContractBed('cover', mode);
  const W = 400;

  it('a limit lowered at run time holds in every window from h after the change; the declared one until then', async () => {
    const queue = bed().queue('lowered');
    await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    const worker = bed().worker('lowered', recordingProcessor(starts), { concurrency: 4, throttles: [Throttle.named('api').limit(6, W)] });
    await waitFor(() => starts.length >= 6, 20_000, 'the declared limit used');
    await bed().admin.setLimits('api', [{ max: 2, window: W }]);
    const loweredAt = await bed().redisNowMs();
    const loweredAtHere = processNowMs();
    await waitFor(() => starts.filter((s) => s.processedOn > loweredAt + mode.hMs).length >= 6, 20_000, 'three windows under the lowered limit');
    await worker.close();
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.filter((s) => s.processedOn >= loweredAt + mode.hMs).map((s) => s.processedOn), W)).toBeLessThanOrEqual(2);
    expect(mostInAnyWindow(starts.filter((s) => s.at >= loweredAtHere + mode.hMs).map((s) => s.at), W)).toBeLessThanOrEqual(2);
  });

  it('a limit raised at run time: the raised N holds, and is in force (more than the declared N go in one window)', async () => {
    const queue = bed().queue('raised');
    const starts: Start[] = [];
    const worker = bed().worker('raised', recordingProcessor(starts), { concurrency: 6, throttles: [Throttle.named('api').limit(2, W)] });
    await worker.waitUntilReady();
    await bed().admin.setLimits('api', [{ max: 6, window: W }]);
    await queue.addBulk(Array.from({ length: 18 }, (_, i) => ({ name: 'call', data: { i } })));
    await waitFor(() => starts.length === 18, 20_000, 'every job started');
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeGreaterThan(2);
  });

  it('a tier for one key: its bucket holds its own N, the others the declared one', async () => {
    const queue = bed().queue('tiers');
    const starts: Start[] = [];
    const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).limit(2, W);
    const worker = bed().worker('tiers', recordingProcessor(starts), { concurrency: 8, throttles: [perCustomer] });
    await worker.waitUntilReady();
    await bed().admin.setLimits('api-per-customer', [{ max: 5, window: W }], { key: ['bigco'] });
    await queue.addBulk(Array.from({ length: 24 }, (_, i) => ({ name: 'call', data: { customer: i % 2 ? 'bigco' : 'acme' } })));
    await waitFor(() => starts.length === 24, 20_000, 'every job started');
    for (const field of ['processedOn', 'at'] as const) {
      const of = (customer: string) => starts.filter((s) => s.data.customer === customer).map((s) => s[field]);
      expect(mostInAnyWindow(of('bigco'), W)).toBeLessThanOrEqual(5);
      expect(mostInAnyWindow(of('acme'), W)).toBeLessThanOrEqual(2);
    }
    expect(mostInAnyWindow(starts.filter((s) => s.data.customer === 'bigco').map((s) => s.processedOn), W)).toBeGreaterThan(2);
  });

  it('an override with a time to live: once it lapses, the declared limit holds again', async () => {
    const queue = bed().queue('ttl');
    const starts: Start[] = [];
    const worker = bed().worker('ttl', recordingProcessor(starts), { concurrency: 6, throttles: [Throttle.named('api').limit(2, W)] });
    await worker.waitUntilReady();
    const setAt = await bed().redisNowMs();
    await bed().admin.setLimits('api', [{ max: 6, window: W }], { ttlMs: 500 });
    // Its time to live runs on the Redis clock from the call: it has lapsed by 500 ms after the call returned.
    const lapsed = (await bed().redisNowMs()) + 500;
    const lapsedHere = processNowMs() + 500;
    await queue.addBulk(Array.from({ length: 14 }, (_, i) => ({ name: 'call', data: { i } })));
    await waitFor(() => starts.length === 14, 20_000, 'every job started');
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(6);
    expect(mostInAnyWindow(starts.filter((s) => s.processedOn >= lapsed + mode.hMs).map((s) => s.processedOn), W)).toBeLessThanOrEqual(2);
    expect(mostInAnyWindow(starts.filter((s) => s.at >= lapsedHere + mode.hMs).map((s) => s.at), W)).toBeLessThanOrEqual(2);
    expect(mostInAnyWindow(starts.filter((s) => s.processedOn < setAt + 500).map((s) => s.processedOn), W)).toBeGreaterThan(2);
  });
});
