import { Key, Throttle } from '../../src';
import { Rate } from '../../src/declarations/Rate';
import { worstRateExcess } from '../model/rateModel';
import { waitFor } from '../support/bullmq';
import { describeEachMode, recordingProcessor, Start, useContractBed } from './contractSuite';

// Rates: rate(n, per, { burst }) lets at most burst + n·t/per deliveries go in any span t, at processor start as at
// processedOn (a burst that covers h: leased delivery needs at least 1 + n·h/per, 2 here with h = 100 ms).

/** Times in ms (processedOn is whole ms of the grant's us): a span read from them may be up to 1 ms short. */
function excessOfMsTimes(times: readonly number[], rate: Rate): number {
  return worstRateExcess(times.map((ms) => ms * 1000), rate) - rate.n / rate.perMs;
}

describeEachMode('contract: rate', (mode) => {
  const bed = useContractBed('crate', mode);

  it('at most burst + n·t/per in any span t, across two workers, from processor starts and from processedOn', async () => {
    const rate = { n: 10, perMs: 1_000, burst: 3 };
    const queue = bed().queue('sends');
    await queue.addBulk(Array.from({ length: 14 }, (_, i) => ({ name: 'send', data: { i } })));
    const starts: Start[] = [];
    const throttles = [Throttle.named('mail').rate(rate.n, rate.perMs, { burst: rate.burst })];
    bed().worker('sends', recordingProcessor(starts), { concurrency: 3, throttles });
    bed().worker('sends', recordingProcessor(starts), { concurrency: 3, throttles });
    await waitFor(() => starts.length === 14, 30_000, 'every job started');
    expect(excessOfMsTimes(starts.map((s) => s.processedOn), rate)).toBeLessThanOrEqual(0);
    expect(excessOfMsTimes(starts.map((s) => s.at), rate)).toBeLessThanOrEqual(0);
  });

  it('a keyed rate holds per bucket beside a shared one', async () => {
    const shared = { n: 20, perMs: 1_000, burst: 4 };
    const perCustomer = { n: 8, perMs: 1_000, burst: 2 };
    const queue = bed().queue('keyed');
    await queue.addBulk(Array.from({ length: 16 }, (_, i) => ({ name: 'send', data: { customer: i % 2 ? 'acme' : 'globex' } })));
    const starts: Start[] = [];
    bed().worker('keyed', recordingProcessor(starts), {
      concurrency: 4,
      throttles: [
        Throttle.named('mail').rate(shared.n, shared.perMs, { burst: shared.burst }),
        Throttle.named('mail-per-customer').key([Key.data('customer')]).rate(perCustomer.n, perCustomer.perMs, { burst: perCustomer.burst }),
      ],
    });
    await waitFor(() => starts.length === 16, 30_000, 'every job started');
    for (const field of ['processedOn', 'at'] as const) {
      expect(excessOfMsTimes(starts.map((s) => s[field]), shared)).toBeLessThanOrEqual(0);
      for (const customer of ['acme', 'globex']) {
        expect(excessOfMsTimes(starts.filter((s) => s.data.customer === customer).map((s) => s[field]), perCustomer)).toBeLessThanOrEqual(0);
      }
    }
  });
});
