import express from 'express';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { createDashboardHandler } from '../../src';
import type { WireBucketPage, WireJob, WireOverviewWithHistory } from '../../src/dashboard/wire';
import { waitUntil, done, notYet } from '../support/waitUntil';
import { testRedisUrl } from '../support/testRedis';
import { EXPECTED_STATES, KindsScenario, startKindsScenario } from './limitKindsScenario';
import { EXPECTED, getJson, postJson, QUEUE, Scenario, startDashboard, startScenario, THROTTLE } from './scenario';

// The dashboard's JSON: what the page reads (overview, bucket, job), its refusals, and mounting under Express.
describe('dashboard API', () => {
  let scenario: Scenario | undefined;
  let kinds: KindsScenario | undefined;
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await scenario?.close();
    await kinds?.close();
    [scenario, kinds] = [undefined, undefined];
  });

  it('answers the overview, a bucket and a job with the live figures, and samples a history', async () => {
    scenario = await startScenario('dash-api');
    const dashboard = await startDashboard({ prefix: scenario.bed.prefix });
    closers.push(() => dashboard.close());

    const { status, body } = await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`);
    expect(status).toBe(200);
    expect(body.writes).toBe(false);
    expect(body.queues.find((q) => q.queue === QUEUE)).toMatchObject({ throttled: EXPECTED.waiting, heldByFullBuckets: EXPECTED.waiting, throttledWorkers: 1 });
    expect(body.queues[0].oldestHeldMs).toEqual(expect.any(Number));
    const throttle = body.throttles.find((t) => t.name === THROTTLE)!;
    expect(throttle).toMatchObject({
      activeBuckets: EXPECTED.activeBuckets, bucketsAtLimit: EXPECTED.bucketsAtLimit, waiting: EXPECTED.waiting,
      limitSource: 'declared', tokensExpired: 0, paused: null,
      lastWindow: [{ windowMs: 600_000, max: 2, delivered: EXPECTED.delivered }],
    });
    expect(throttle.topBuckets.slice(0, 3)).toEqual([{ key: ['acme'], waiting: 120 }, { key: ['beta'], waiting: 2 }, { key: ['gamma'], waiting: 1 }]);

    // The sampler adds a point about once a second: wait for a few, never for a time.
    const series = await waitUntil('three samples of the limit', async () => {
      const history = (await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`)).body.history[THROTTLE]?.['600000'];
      return history && history.t.length >= 3 ? done(history) : notYet(`${history?.t.length ?? 0} samples`);
    }, { timeoutMs: 20_000 });
    // Per bucket: the busiest of the top waiting ones (acme, beta, gamma) is at its limit, 2 of 2; all buckets together: 8.
    expect(series.busiest.slice(-3)).toEqual([2, 2, 2]);
    expect(series.busiestKey.slice(-3)).toEqual(['["acme"]', '["acme"]', '["acme"]']);
    expect(series.delivered.slice(-3)).toEqual([8, 8, 8]);
    expect(series.max.slice(-3)).toEqual([2, 2, 2]);
    expect(body.busiest[THROTTLE]).toEqual([{ windowMs: 600_000, counted: 2, max: 2, key: ['acme'] }]);
    expect([...series.t].sort((a, b) => a - b)).toEqual(series.t);

    const bucket = await getJson<WireBucketPage>(`${dashboard.url}/api/bucket?throttle=${THROTTLE}&key=${encodeURIComponent('["acme"]')}`);
    expect(bucket.status).toBe(200);
    expect(bucket.body.bucket).toMatchObject({ key: ['acme'], limits: [{ windowMs: 600_000, max: 2, counted: 2 }], waiting: 120, bindingNow: '2 per 10m' });
    expect(bucket.body.bucket.nextRoomAt).toBeGreaterThan(bucket.body.bucket.at);
    expect(bucket.body.jobs).toEqual([{ queue: QUEUE, ids: scenario.jobIds.acme.slice(2, 22), total: 120, complete: true }]);

    const held = scenario.jobIds.acme[5];
    const job = await getJson<WireJob>(`${dashboard.url}/api/job?queue=${QUEUE}&id=${held}`);
    expect(job.body).toMatchObject({ state: 'held', held: 'waiting-on-bucket' });
    expect(job.body.reason).toMatch(/^waiting: per-customer \[acme\] is full \(2\/2 per 10m\); room returns in (\d+(\.\d)?s|\d+m( \d+s)?); 3 jobs ahead of it there, it goes in about (19m \d+s|20m)$/);

    expect((await getJson(`${dashboard.url}/api/bucket?throttle=${THROTTLE}&key=acme`)).status).toBe(400);
    expect((await getJson(`${dashboard.url}/api/bucket?throttle=nope`)).status).toBe(404);
    expect((await getJson(`${dashboard.url}/api/job?queue=${QUEUE}`)).status).toBe(400);
  });

  it('charts no busiest bucket while none waits: a gap, not a made-up figure; the all-buckets total goes on', async () => {
    // acme 2 and beta 1 are delivered (2 per 10 min per customer): nothing waits.
    scenario = await startScenario('dash-gap', { acme: 2, beta: 1 });
    const dashboard = await startDashboard({ prefix: scenario.bed.prefix });
    closers.push(() => dashboard.close());
    const series = await waitUntil('three samples of the limit', async () => {
      const history = (await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`)).body.history[THROTTLE]?.['600000'];
      return history && history.t.length >= 3 ? done(history) : notYet(`${history?.t.length ?? 0} samples`);
    }, { timeoutMs: 20_000 });
    expect(series.busiest.slice(-3)).toEqual([null, null, null]);
    expect(series.busiestKey.slice(-3)).toEqual([null, null, null]);
    expect(series.delivered.slice(-3)).toEqual([3, 3, 3]);
    expect((await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`)).body.busiest[THROTTLE]).toEqual([]);
  });

  it('refuses writes with 403 when read-only, and invalid ones with 400 when writes are on', async () => {
    scenario = await startScenario('dash-writes', { acme: 3 });
    const readOnly = await startDashboard({ prefix: scenario.bed.prefix });
    closers.push(() => readOnly.close());
    const refused = await postJson(`${readOnly.url}/api/pause`, { throttle: THROTTLE, key: ['acme'] });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/read-only.*writes: true/);
    expect((await scenario.admin.throttleStats(THROTTLE)).paused).toBeNull();

    const writable = await startDashboard({ prefix: scenario.bed.prefix, writes: true });
    closers.push(() => writable.close());
    const badLimit = await postJson(`${writable.url}/api/limits`, { throttle: THROTTLE, limits: [{ max: 0, window: '1m' }] });
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.kind).toMatch(/Invalid(Option|Throttle)Error/);
    expect(badLimit.body.error).toContain('0');
    expect((await postJson(`${writable.url}/api/limits`, { throttle: THROTTLE, limits: [{ max: 5, window: 'soon' }] })).status).toBe(400);
    expect((await postJson(`${writable.url}/api/limits`, { throttle: THROTTLE, limits: [] })).status).toBe(400);
    expect((await postJson(`${writable.url}/api/pause`, { throttle: THROTTLE, forMs: -5 })).status).toBe(400);
    expect((await postJson(`${writable.url}/api/pause`, { throttle: THROTTLE, key: 'acme' })).status).toBe(400);
    expect((await postJson(`${writable.url}/api/pause`, '{not json')).status).toBe(400);
    expect((await postJson(`${writable.url}/api/pause`, 'throttle=x', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await fetch(`${writable.url}/api/pause`)).status).toBe(405);
    expect((await scenario.admin.throttleStats(THROTTLE)).limitSource).toBe('declared');

    const set = await postJson(`${writable.url}/api/limits`, { throttle: THROTTLE, key: ['acme'], limits: [{ max: 5, window: '10m' }] });
    expect(set.status).toBe(200);
    expect((await scenario.admin.throttleBucket(THROTTLE, ['acme'])).limitSource).toBe('override');
    expect((await postJson(`${writable.url}/api/limits/clear`, { throttle: THROTTLE, key: ['acme'] })).status).toBe(200);
    expect((await scenario.admin.throttleBucket(THROTTLE, ['acme'])).limitSource).toBe('declared');
    const released = await postJson(`${writable.url}/api/release`, { queue: QUEUE });
    expect(released.status).toBe(409);
    expect(released.body.kind).toBe('QueueStillThrottledError');
  });

  it('works mounted under an Express path: links under the mount, other paths left to the app', async () => {
    scenario = await startScenario('dash-express', { acme: 3 });
    const handler = createDashboardHandler({ connection: testRedisUrl(), prefix: scenario.bed.prefix });
    const app = express();
    app.use(express.json());
    app.use('/admin/throttles', handler);
    app.get('/health', (_req, res) => { res.send('ok'); });
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const bare = await fetch(`${base}/admin/throttles`, { redirect: 'manual' });
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/admin/throttles/');
    const page = await fetch(`${base}/admin/throttles/`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('<base href="/admin/throttles/">');
    expect((await fetch(`${base}/admin/throttles/app.js`)).headers.get('content-type')).toMatch(/javascript/);
    const overview = await getJson<WireOverviewWithHistory>(`${base}/admin/throttles/api/overview`);
    expect(overview.body.throttles.map((t) => t.name)).toEqual([THROTTLE]);
    expect(await (await fetch(`${base}/health`)).text()).toBe('ok');
    expect((await fetch(`${base}/admin/elsewhere`)).status).toBe(404);
    // express.json() has read the body already: the handler takes it from req.body (and refuses, read-only).
    expect((await postJson(`${base}/admin/throttles/api/pause`, { throttle: THROTTLE })).status).toBe(403);
  });

  it("says each throttle's state, its units in flight, its cost and its hold-time percentiles, and samples its flow", async () => {
    kinds = await startKindsScenario('dash-kinds');
    const dashboard = await startDashboard({ prefix: kinds.bed.prefix });
    closers.push(() => dashboard.close());
    const { body } = await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`);
    const byName = Object.fromEntries(body.throttles.map((t) => [t.name, t]));
    expect(Object.fromEntries(body.throttles.map((t) => [t.name, t.state]))).toEqual(EXPECTED_STATES);
    expect(byName['in-flight'].inFlight).toEqual({ counted: 2, max: 2, key: [] });
    expect(byName['rate-only']).toMatchObject({ inFlight: null, cost: null, waiting: 4, limitedTotal: 4 });
    expect(byName.open).toMatchObject({ cost: 'Cost.data("tokens") with default 1', lastWindow: [{ windowMs: 60_000, max: 1000, delivered: 15 }] });
    expect(byName.open.adaptive).toMatchObject({ target: 60_000, ceiling: 1000, min: 10, live: 500, loweredBuckets: 1 });
    expect(byName['rate-only'].adaptive).toBeNull();
    // 3 delivered without waiting: each at most the first bound; 'rate-only' delivered 1, also without waiting.
    expect(byName.open.holdPercentiles).toEqual({ count: 3, meanMs: 0, p50: { atMostMs: 100 }, p90: { atMostMs: 100 }, p99: { atMostMs: 100 } });
    expect(byName.stopped.holdPercentiles).toEqual({ count: 0, meanMs: null, p50: null, p90: null, p99: null });

    const flow = await waitUntil('three flow samples', async () => {
      const series = (await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`)).body.flowHistory['in-flight'];
      return series && series.t.length >= 3 ? done(series) : notYet(`${series?.t.length ?? 0} samples`);
    }, { timeoutMs: 20_000 });
    expect(flow.inFlight.slice(-3)).toEqual([2, 2, 2]);
    expect(flow.inFlightMax.slice(-3)).toEqual([2, 2, 2]);
    // Nothing more goes while the two run: 0 per second once a second sample is there.
    expect(flow.perSecond.slice(-2)).toEqual([0, 0]);
    const rated = (await getJson<WireOverviewWithHistory>(`${dashboard.url}/api/overview`)).body.flowHistory['rate-only'];
    expect(rated.ratePerSecond.at(-1)).toBeCloseTo(1 / 600, 10);
  });

  it('keeps the sampled history in Redis, capped, and reads it back when restarted', async () => {
    scenario = await startScenario('dash-restart', { acme: 3 });
    const first = await startDashboard({ prefix: scenario.bed.prefix, historySamples: 5 });
    const before = await waitUntil('five samples', async () => {
      const history = (await getJson<WireOverviewWithHistory>(`${first.url}/api/overview`)).body.history[THROTTLE]?.['600000'];
      return history && history.t.length >= 5 ? done(history) : notYet(`${history?.t.length ?? 0} samples`);
    }, { timeoutMs: 20_000 });
    await first.close();
    const key = scenario.admin.keys.dashboardHistory;
    expect(key).toBe(`${scenario.bed.prefix}::throttle:{${encodeURIComponent(scenario.bed.prefix)}}::dashboard:history`);
    // Capped at historySamples entries, and lapsing once no dashboard writes.
    expect(await scenario.redis.llen(key)).toBe(5);
    expect(await scenario.redis.pttl(key)).toBeGreaterThan(0);

    const second = await startDashboard({ prefix: scenario.bed.prefix, historySamples: 5 });
    closers.push(() => second.close());
    const after = (await getJson<WireOverviewWithHistory>(`${second.url}/api/overview`)).body;
    // The first answer already holds what the first dashboard sampled (it may have sampled once more before closing).
    const restored = after.history[THROTTLE]['600000'].t;
    expect(restored).toEqual(expect.arrayContaining(before.t.slice(-3)));
    expect(after.flowHistory[THROTTLE].t).toEqual(expect.arrayContaining(before.t.slice(-3)));
    expect(restored.length).toBeLessThanOrEqual(5);
  });
});
