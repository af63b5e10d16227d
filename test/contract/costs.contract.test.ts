import { Cost, Key, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { mostCostAtOnce, mostCostInAnyWindow } from '../support/inFlight';
import { describeEachMode, recordingProcessor, sleep, Start, useContractBed } from './contractSuite';

// Costs: with cost(source), a job counts its cost against every limit of the throttle: at most N units in any W
// (a window), at most n units in flight (a concurrency), beside the throttles that count it once.
describeEachMode('contract: costs', (mode) => {
  const bed = useContractBed('ccost', mode);

  it('a units-per-window limit and a requests limit beside it: at most N units and M requests in any W', async () => {
    const units = Throttle.named('llm-tokens').cost(Cost.data('tokens')).limit(100, 500);
    const requests = Throttle.named('llm-requests').limit(4, 500);
    const queue = bed().queue('prompts');
    const costs = Array.from({ length: 15 }, (_, i) => [10, 40, 25, 5, 30][i % 5]);
    await queue.addBulk(costs.map((tokens) => ({ name: 'prompt', data: { tokens } })));
    const starts: Start[] = [];
    bed().worker('prompts', recordingProcessor(starts), { concurrency: 4, throttles: [units, requests] });
    bed().worker('prompts', recordingProcessor(starts), { concurrency: 4, throttles: [units, requests] });
    await waitFor(() => starts.length === 15, 30_000, 'every prompt started');
    for (const field of ['at', 'processedOn'] as const) {
      expect(mostCostInAnyWindow(starts.map((s) => ({ at: s[field], cost: s.data.tokens })), 500)).toBeLessThanOrEqual(100);
      expect(mostCostInAnyWindow(starts.map((s) => ({ at: s[field], cost: 1 })), 500)).toBeLessThanOrEqual(4);
    }
  });

  it('a keyed cost: each bucket\'s units held apart, and a job costing the whole limit still goes', async () => {
    const perAccount = Throttle.named('units-per-account').key([Key.data('account')]).cost(Cost.data('units')).limit(6, 400);
    const queue = bed().queue('accounts');
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'call', data: { account: i % 2 ? 'a' : 'b', units: [6, 1, 3, 2][i % 4] } })));
    const starts: Start[] = [];
    bed().worker('accounts', recordingProcessor(starts), { concurrency: 4, throttles: [perAccount] });
    await waitFor(() => starts.length === 12, 30_000, 'every job started');
    for (const account of ['a', 'b']) {
      for (const field of ['at', 'processedOn'] as const) {
        const mine = starts.filter((s) => s.data.account === account).map((s) => ({ at: s[field], cost: s.data.units }));
        expect(mostCostInAnyWindow(mine, 400)).toBeLessThanOrEqual(6);
      }
    }
  });

  it('costs against a concurrency: the jobs in flight of a bucket never cost more than n together', async () => {
    const gpu = Throttle.named('gpu-slots').key([Key.data('cluster')]).cost(Cost.data('gpus')).concurrency(4);
    const queue = bed().queue('training');
    await queue.addBulk(Array.from({ length: 16 }, (_, i) => ({ name: 'train', data: { cluster: i % 2 ? 'east' : 'west', gpus: [1, 4, 2, 3][i % 4] } })));
    const starts: Start[] = [];
    const processor = recordingProcessor(starts, () => sleep(20 + (starts.length * 7) % 30));
    bed().worker('training', processor, { concurrency: 6, throttles: [gpu] });
    bed().worker('training', processor, { concurrency: 6, throttles: [gpu] });
    await waitFor(async () => (await queue.getCompletedCount()) === 16, 30_000, 'every job completed');
    const jobs = await queue.getJobs(['completed'], 0, -1);
    for (const cluster of ['east', 'west']) {
      // As bullmq records them (processedOn to finishedOn), and as the processors ran (inside those).
      const spans = jobs.filter((j) => j.data.cluster === cluster).map((j) => ({ from: j.processedOn!, to: j.finishedOn!, cost: j.data.gpus as number }));
      expect(mostCostAtOnce(spans)).toBeLessThanOrEqual(4);
      const ran = starts.filter((s) => s.data.cluster === cluster).map((s) => ({ from: s.at, to: s.endedAt!, cost: s.data.gpus as number }));
      expect(mostCostAtOnce(ran)).toBeLessThanOrEqual(4);
    }
  });
});
