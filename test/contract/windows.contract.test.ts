import { Key, Missing, mostInAnyWindow, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { describeEachMode, recordingProcessor, Start, useContractBed } from './contractSuite';

// Windows: for every limit of every bucket, at most N deliveries in any window of length W, across every worker,
// seen at processor starts and at processedOn.
describeEachMode('contract: windows', (mode) => {
  const bed = useContractBed('cwin', mode);

  it('at most N starts in any W across two workers of one queue, from processor starts and from processedOn', async () => {
    const N = 4;
    const W = 400;
    const queue = bed().queue('backlog');
    await queue.addBulk(Array.from({ length: 16 }, (_, i) => ({ name: 'call', data: { i } })));
    const starts: Start[] = [];
    const throttles = [Throttle.named('api').limit(N, W)];
    bed().worker('backlog', recordingProcessor(starts), { concurrency: 3, throttles });
    bed().worker('backlog', recordingProcessor(starts), { concurrency: 3, throttles });
    await waitFor(async () => (await queue.getCompletedCount()) === 16, 30_000, 'every job completed');
    expect(new Set(starts.map((s) => s.id)).size).toBe(16);
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(N);
  });

  it('two queues sharing a throttle name share its windows: at most N starts in any W over both', async () => {
    const N = 3;
    const W = 300;
    const starts: Start[] = [];
    const throttles = [Throttle.named('shared').limit(N, W)];
    for (const name of ['left', 'right']) {
      await bed().queue(name).addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'call', data: { i } })));
      bed().worker(name, recordingProcessor(starts), { concurrency: 3, throttles });
    }
    await waitFor(() => starts.length === 12, 30_000, 'every job of both queues started');
    expect(mostInAnyWindow(starts.map((s) => s.at), W)).toBeLessThanOrEqual(N);
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(N);
  });

  it('every limit of every bucket: two windows of one throttle and a keyed throttle, each held per bucket', async () => {
    const queue = bed().queue('keyed');
    // The jobs without a customer are not throttled per customer (Missing.Unthrottled) but count in 'api'.
    await queue.addBulk(Array.from({ length: 18 }, (_, i) => ({ name: 'call', data: i % 3 === 2 ? {} : { customer: i % 3 === 0 ? 'acme' : 'globex' } })));
    const starts: Start[] = [];
    const api = Throttle.named('api').limit(4, 300).limit(6, 1_000);
    const perCustomer = Throttle.named('api-per-customer').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(2, 300);
    bed().worker('keyed', recordingProcessor(starts), { concurrency: 4, throttles: [api, perCustomer] });
    await waitFor(() => starts.length === 18, 30_000, 'every job started');
    for (const field of ['at', 'processedOn'] as const) {
      const times = starts.map((s) => s[field]);
      expect(mostInAnyWindow(times, 300)).toBeLessThanOrEqual(4);
      expect(mostInAnyWindow(times, 1_000)).toBeLessThanOrEqual(6);
      for (const customer of ['acme', 'globex']) {
        expect(mostInAnyWindow(starts.filter((s) => s.data.customer === customer).map((s) => s[field]), 300)).toBeLessThanOrEqual(2);
      }
    }
  });
});
