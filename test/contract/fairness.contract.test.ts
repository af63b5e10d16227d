import { Key, mostInAnyWindow, Throttle } from '../../src';
import { waitFor } from '../support/bullmq';
import { formatFairShares } from '../../src/cli/commands/stats';
import { describeEachMode, recordingProcessor, Start, useContractBed } from './contractSuite';

// Fair shares (ThrottledWorker's fairness option, issue 30 item 1): held jobs of several groups take turns in
// proportion to their weights, whatever order they were added in, under one shared limit.
describeEachMode('contract: fair shares between groups', (mode) => {
  const bed = useContractBed('fairness', mode);
  const W = 250;

  /** The tenants of the first `n` starts, by processor start. */
  const firstTenants = (starts: readonly Start[], n: number) => [...starts].sort((a, b) => a.at - b.at).slice(0, n).map((s) => s.data.tenant as string);

  it('three tenants, one with 10× the backlog added first: the small ones finish as if the limit were split three ways', async () => {
    const queue = bed().queue('tenants');
    const big = 300;
    const small = 30;
    await queue.addBulk(Array.from({ length: big }, (_, i) => ({ name: 'call', data: { tenant: 'bigco', i } })));
    await queue.addBulk(['acme', 'initech'].flatMap((tenant) => Array.from({ length: small }, (_, i) => ({ name: 'call', data: { tenant, i } }))));
    const starts: Start[] = [];
    const shared = Throttle.named('api').limit(20, W);
    const worker = bed().worker('tenants', recordingProcessor(starts), { concurrency: 10, throttles: [shared], fairness: { key: Key.data('tenant') } });
    await waitFor(() => starts.filter((s) => s.data.tenant !== 'bigco').length >= 2 * small, 30_000, 'the small tenants done');
    await worker.close();
    const order = firstTenants(starts, starts.length);
    // The small tenants' last jobs start within the first 3 × 30 starts (after the window's first 20, which went before
    // any was held), 25% slack for the jobs that went at once.
    const lastSmall = Math.max(order.lastIndexOf('acme'), order.lastIndexOf('initech'));
    expect(lastSmall).toBeLessThan(20 + Math.ceil(3 * small * 1.25));
    // The big one keeps its share meanwhile: about a third of the held jobs started.
    const heldStarts = order.slice(20, lastSmall + 1);
    const bigShare = heldStarts.filter((t) => t === 'bigco').length / heldStarts.length;
    console.log(`fairness (${mode.name}): the small tenants' last start ${lastSmall + 1} of ${order.length}; the big one's share of the held starts meanwhile ${bigShare.toFixed(2)}`);
    expect(bigShare).toBeGreaterThan(0.2);
    expect(bigShare).toBeLessThan(0.45);
  });

  // Classified in the delivery script (the key is a data path), or by the worker (an attributes function makes it
  // see every job first: lua/classifyJobs-7.lua).
  it.each([['the delivery script', false], ['the worker', true]] as const)('weights 3:1 give deliveries 3:1 within 20%%, whatever order the jobs came in (classified by %s)', async (_by, byWorker) => {
    const queue = bed().queue('weights');
    await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'call', data: { tenant: 'light', i } })));
    await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'call', data: { tenant: 'heavy', i } })));
    const starts: Start[] = [];
    const worker = bed().worker('weights', recordingProcessor(starts), {
      concurrency: 10, throttles: [Throttle.named('api').limit(20, W)], fairness: { key: Key.data('tenant'), weights: { heavy: 3 } },
      ...(byWorker ? { attributes: () => ({ seen: true }) } : {}),
    });
    await waitFor(() => starts.length >= 100, 30_000, '100 starts');
    // What queueStats (and the CLI's stats) say of it: the groups, and the heavy one ahead by its weight.
    const fair = (await bed().admin.queueStats('weights')).fairness!;
    expect(fair).toMatchObject({ key: '[Key.data("tenant")]', groups: 2 });
    expect(fair.top.map((g) => [g.key, g.weight])).toEqual([[['heavy'], 3], [['light'], 1]]);
    expect(fair.delivered).toBe(fair.top[0].delivered + fair.top[1].delivered);
    // 60 of the 80 held starts, and none of the first window's 20 (the light jobs came first): 0.6 at 100.
    expect(fair.top[0].share).toBeGreaterThanOrEqual(0.55);
    expect(formatFairShares(fair)).toMatch(/^by \[Key\.data\("tenant"\)\], 2 groups: heavy \d+% \(weight 3\), light \d+% of \d+ delivered$/);
    await worker.close();
    // Past the first window (which went before any job was held): 80 held starts.
    const held = firstTenants(starts, 100).slice(20);
    const heavy = held.filter((t) => t === 'heavy').length;
    const light = held.length - heavy;
    console.log(`fairness (${mode.name}, by ${_by}): weights 3:1 gave ${heavy}:${light}`);
    expect(heavy / light).toBeGreaterThan(3 * 0.8);
    expect(heavy / light).toBeLessThan(3 * 1.2);
  });

  it('a weight set at run time (setFairnessWeight) counts for the jobs held after it', async () => {
    const queue = bed().queue('runtime');
    const starts: Start[] = [];
    const worker = bed().worker('runtime', recordingProcessor(starts), {
      concurrency: 10, throttles: [Throttle.named('api').limit(20, W)], fairness: { key: Key.data('tenant'), weights: { heavy: 1 } },
    });
    await worker.waitUntilReady();
    await bed().admin.setFairnessWeight('runtime', 'heavy', 3);
    await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'call', data: { tenant: 'light', i } })));
    await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: 'call', data: { tenant: 'heavy', i } })));
    await waitFor(() => starts.length >= 100, 30_000, '100 starts');
    await worker.close();
    const held = firstTenants(starts, 100).slice(20);
    const heavy = held.filter((t) => t === 'heavy').length;
    expect(heavy / (held.length - heavy)).toBeGreaterThan(3 * 0.8);
    expect(heavy / (held.length - heavy)).toBeLessThan(3 * 1.2);
  });

  it.each([['the delivery script', false], ['the worker', true]] as const)('a tenant that comes later takes turns from the current one, with no credit for the time it had nothing (classified by %s)', async (_by, byWorker) => {
    const queue = bed().queue('late');
    await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'call', data: { tenant: 'early', i } })));
    const starts: Start[] = [];
    const worker = bed().worker('late', recordingProcessor(starts), {
      concurrency: 10, throttles: [Throttle.named('api').limit(20, W)], fairness: { key: Key.data('tenant') },
      ...(byWorker ? { attributes: () => ({ seen: true }) } : {}),
    });
    await waitFor(() => starts.length >= 60, 30_000, '60 starts');
    const before = starts.length;
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'call', data: { tenant: 'late', i } })));
    await waitFor(() => starts.filter((s) => s.data.tenant === 'late').length >= 30, 30_000, 'the late tenant done');
    await worker.close();
    // The 40 starts after those already under way: about half each, not the late tenant's 30 in a row.
    const next = firstTenants(starts, starts.length).slice(before + 10, before + 50);
    const late = next.filter((t) => t === 'late').length;
    console.log(`fairness (${mode.name}, by ${_by}): a late tenant took ${late} of the 40 starts after it came`);
    expect(late).toBeGreaterThanOrEqual(12);
    expect(late).toBeLessThanOrEqual(28);
  });

  it('Key.fairness() keys a throttle by the fairness key: each tenant held to its own limit, taking turns within the shared one', async () => {
    const queue = bed().queue('keyed');
    await queue.addBulk(['acme', 'bigco'].flatMap((tenant) => Array.from({ length: 30 }, (_, i) => ({ name: 'call', data: { tenant, i } }))));
    const starts: Start[] = [];
    const perTenant = Throttle.named('api-per-tenant').key([Key.fairness()]).limit(4, W);
    const worker = bed().worker('keyed', recordingProcessor(starts), {
      concurrency: 10, throttles: [Throttle.named('api').limit(6, W), perTenant], fairness: { key: Key.data('tenant') },
    });
    await waitFor(() => starts.length >= 30, 30_000, '30 starts');
    await worker.close();
    for (const tenant of ['acme', 'bigco']) {
      expect(mostInAnyWindow(starts.filter((s) => s.data.tenant === tenant).map((s) => s.processedOn), W)).toBeLessThanOrEqual(4);
    }
    expect(mostInAnyWindow(starts.map((s) => s.processedOn), W)).toBeLessThanOrEqual(6);
    // Both tenants go in every stretch: within the first 30 starts, each has at least a third.
    const first = firstTenants(starts, 30);
    expect(first.filter((t) => t === 'acme').length).toBeGreaterThanOrEqual(10);
    expect(first.filter((t) => t === 'bigco').length).toBeGreaterThanOrEqual(10);
  });
});
