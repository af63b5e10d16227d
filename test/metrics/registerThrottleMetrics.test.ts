import { createServer, Server, Socket } from 'node:net';
import { OpenMetricsContentType, Registry } from 'prom-client';
import { Throttle, ThrottleAdmin } from '../../src';
import { registerThrottleMetrics } from '../../src/metrics/registerThrottleMetrics';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';
import { testRedisUrl } from '../support/testRedis';
import { TcpProxy } from './tcpProxy';
import { MetricsScenario, seriesLines, seriesValue, startScenario } from './scenario';

const THROTTLE_METRICS = [
  'bullmq_throttle_jobs_limited_total',
  'bullmq_throttle_jobs_delivered_total',
  'bullmq_throttle_tokens_expired_total',
  'bullmq_throttle_recovery_hold_seconds',
  'bullmq_throttle_paused',
  'bullmq_throttle_paused_buckets',
  'bullmq_throttle_adaptive_limit',
  'bullmq_throttle_adaptive_lowered_buckets',
  'bullmq_throttle_oldest_waiting_seconds',
  'bullmq_throttle_hold_seconds',
  'bullmq_throttle_active_buckets',
  'bullmq_throttle_buckets_at_limit',
  'bullmq_throttle_waiting_jobs',
  'bullmq_throttle_effective_burst_jobs',
  'bullmq_throttle_effective_concurrency_jobs',
  'bullmq_throttle_effective_limit_jobs',
  'bullmq_throttle_effective_rate_per_second',
  'bullmq_throttle_window_delivered_jobs',
  'bullmq_throttle_queue_held_jobs',
  'bullmq_throttle_queue_waiting_jobs',
  'bullmq_throttle_queue_oldest_waiting_seconds',
  'bullmq_throttle_queue_fair_groups',
  'bullmq_throttle_queue_fair_top_share',
  'bullmq_throttle_declaring_workers',
  'bullmq_throttle_queue_plain_workers',
];

describe('registerThrottleMetrics, against a scenario with known answers', () => {
  let scenario: MetricsScenario;
  beforeAll(async () => {
    scenario = await startScenario('metrics');
  });
  afterAll(async () => {
    await scenario.close();
  });

  async function withMetrics<T>(options: { queues?: string[] }, use: (registry: Registry, admin: ThrottleAdmin) => Promise<T>): Promise<T> {
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: scenario.admin, ...options });
    try {
      return await use(registry, scenario.admin);
    } finally {
      await metrics.close();
    }
  }

  it('reports the throttle and queue figures in the text format', async () => {
    await withMetrics({}, async (registry) => {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE bullmq_throttle_jobs_limited_total counter');
      expect(text).toContain('# TYPE bullmq_throttle_jobs_delivered_total counter');
      expect(text).toContain('# TYPE bullmq_throttle_waiting_jobs gauge');
      const expected: Record<string, number> = {
        'bullmq_throttle_active_buckets{throttle="per-customer"}': 5,
        'bullmq_throttle_paused{throttle="per-customer"}': 0,
        'bullmq_throttle_paused_buckets{throttle="per-customer"}': 0,
        'bullmq_throttle_buckets_at_limit{throttle="per-customer"}': 3,
        'bullmq_throttle_waiting_jobs{throttle="per-customer"}': 121,
        'bullmq_throttle_jobs_limited_total{throttle="per-customer"}': 121,
        'bullmq_throttle_jobs_delivered_total{throttle="per-customer"}': 8,
        'bullmq_throttle_effective_limit_jobs{throttle="per-customer",window="1m"}': 2,
        'bullmq_throttle_window_delivered_jobs{throttle="per-customer",window="1m"}': 8,
        'bullmq_throttle_active_buckets{throttle="everything"}': 1,
        'bullmq_throttle_buckets_at_limit{throttle="everything"}': 0,
        'bullmq_throttle_waiting_jobs{throttle="everything"}': 0,
        'bullmq_throttle_effective_limit_jobs{throttle="everything",window="1m"}': 1000,
        'bullmq_throttle_window_delivered_jobs{throttle="everything",window="1m"}': 8,
        'bullmq_throttle_effective_limit_jobs{throttle="emails",window="1s"}': 5,
        'bullmq_throttle_effective_limit_jobs{throttle="reports-only",window="1s"}': 10,
        'bullmq_throttle_queue_held_jobs{queue="orders"}': 121,
        'bullmq_throttle_queue_waiting_jobs{queue="orders"}': 121,
        'bullmq_throttle_queue_held_jobs{queue="reports"}': 0,
        'bullmq_throttle_queue_oldest_waiting_seconds{queue="reports"}': 0,
        'bullmq_throttle_declaring_workers{queue="orders",throttle="per-customer"}': 2,
        'bullmq_throttle_declaring_workers{queue="orders",throttle="everything"}': 1,
        'bullmq_throttle_declaring_workers{queue="orders",throttle="emails"}': 1,
        'bullmq_throttle_declaring_workers{queue="reports",throttle="reports-only"}': 1,
        'bullmq_throttle_queue_plain_workers{queue="orders"}': 0,
        bullmq_throttle_metrics_collect_success: 1,
      };
      for (const [series, value] of Object.entries(expected)) expect([series, seriesValue(text, series)]).toEqual([series, value]);
      const oldest = seriesValue(text, 'bullmq_throttle_queue_oldest_waiting_seconds{queue="orders"}')!;
      expect(oldest).toBeGreaterThanOrEqual(0);
      expect(oldest).toBeLessThan(30);
      // Labelled by throttle, queue and window only: no key value anywhere, and one series per throttle.
      expect(text).not.toMatch(/acme|b1|b2|b3|b4/);
      // (A histogram's buckets carry le, its upper bound.)
      for (const line of seriesLines(text)) expect(line).toMatch(/^bullmq_throttle_[a-z_]+(\{((throttle|queue|window|le)="[^"]*",?)+\})? [0-9.e+-]+$/);
      expect(seriesLines(text).filter((l) => l.startsWith('bullmq_throttle_waiting_jobs{'))).toHaveLength(4);
    });
  });

  it('reports the same figures through getMetricsAsJSON, with no key value in any label', async () => {
    await withMetrics({}, async (registry) => {
      const json = await registry.getMetricsAsJSON();
      const byName = new Map(json.map((metric) => [metric.name, metric]));
      expect([...byName.keys()].sort()).toEqual([...THROTTLE_METRICS, 'bullmq_throttle_metrics_collect_success'].sort());
      const values = (name: string) => byName.get(name)!.values.map((v) => ({ labels: v.labels, value: v.value }));
      expect(byName.get('bullmq_throttle_jobs_limited_total')!.type).toBe('counter');
      expect(values('bullmq_throttle_jobs_limited_total')).toEqual(expect.arrayContaining([{ labels: { throttle: 'per-customer' }, value: 121 }]));
      expect(values('bullmq_throttle_jobs_delivered_total')).toEqual(expect.arrayContaining([{ labels: { throttle: 'per-customer' }, value: 8 }]));
      expect(values('bullmq_throttle_active_buckets')).toEqual(expect.arrayContaining([{ labels: { throttle: 'per-customer' }, value: 5 }]));
      expect(values('bullmq_throttle_buckets_at_limit')).toEqual(expect.arrayContaining([{ labels: { throttle: 'per-customer' }, value: 3 }]));
      expect(values('bullmq_throttle_queue_held_jobs')).toEqual(expect.arrayContaining([{ labels: { queue: 'orders' }, value: 121 }]));
      expect(values('bullmq_throttle_effective_limit_jobs').sort((a, b) => a.labels.throttle!.toString().localeCompare(b.labels.throttle!.toString()))).toEqual([
        { labels: { throttle: 'emails', window: '1s' }, value: 5 },
        { labels: { throttle: 'everything', window: '1m' }, value: 1000 },
        { labels: { throttle: 'per-customer', window: '1m' }, value: 2 },
        { labels: { throttle: 'reports-only', window: '1s' }, value: 10 },
      ]);
      expect(JSON.stringify(json)).not.toMatch(/acme|"b[1-4]"/);
      for (const metric of json) {
        for (const value of metric.values) expect(Object.keys(value.labels).every((l) => ['throttle', 'queue', 'window', 'le'].includes(l))).toBe(true);
      }
    });
  });

  it('reports absolute values: scraping again does not add to the counters', async () => {
    await withMetrics({}, async (registry) => {
      const first = await registry.metrics();
      const second = await registry.metrics();
      const json = await registry.getMetricsAsJSON();
      for (const text of [first, second]) {
        expect(seriesValue(text, 'bullmq_throttle_jobs_limited_total{throttle="per-customer"}')).toBe(121);
        expect(seriesValue(text, 'bullmq_throttle_jobs_delivered_total{throttle="per-customer"}')).toBe(8);
      }
      expect(json.find((m) => m.name === 'bullmq_throttle_jobs_delivered_total')!.values.find((v) => v.labels.throttle === 'per-customer')!.value).toBe(8);
    });
  });

  it('pauses show as gauges: the whole throttle, and buckets paused on their own', async () => {
    await withMetrics({}, async (registry, admin) => {
      await admin.pause('everything', { forMs: 60_000 });
      await admin.pause('per-customer', { key: ['b1'], forMs: 60_000 });
      await admin.pause('per-customer', { key: ['b2'], forMs: 60_000 });
      try {
        const text = await registry.metrics();
        expect(seriesValue(text, 'bullmq_throttle_paused{throttle="everything"}')).toBe(1);
        expect(seriesValue(text, 'bullmq_throttle_paused_buckets{throttle="everything"}')).toBe(0);
        expect(seriesValue(text, 'bullmq_throttle_paused{throttle="per-customer"}')).toBe(0);
        expect(seriesValue(text, 'bullmq_throttle_paused_buckets{throttle="per-customer"}')).toBe(2);
      } finally {
        await admin.resume('everything');
        await admin.resume('per-customer');
      }
      const after = await registry.metrics();
      expect(seriesValue(after, 'bullmq_throttle_paused{throttle="everything"}')).toBe(0);
      expect(seriesValue(after, 'bullmq_throttle_paused_buckets{throttle="per-customer"}')).toBe(0);
    });
  });

  it('works with an OpenMetrics registry (counters named without _total in TYPE, with it in samples)', async () => {
    const registry = new Registry<OpenMetricsContentType>();
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const metrics = registerThrottleMetrics(registry, { connection: scenario.admin });
    try {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE bullmq_throttle_jobs_limited counter');
      expect(seriesValue(text, 'bullmq_throttle_jobs_limited_total{throttle="per-customer"}')).toBe(121);
      expect(seriesValue(text, 'bullmq_throttle_jobs_delivered_total{throttle="per-customer"}')).toBe(8);
      expect(text.endsWith('# EOF\n')).toBe(true);
    } finally {
      await metrics.close();
    }
    expect(registry.getMetricsAsArray()).toHaveLength(0);
  });

  it('reads Redis once per scrape, whatever the number of metrics', async () => {
    await withMetrics({}, async (registry, admin) => {
      const live = jest.spyOn(admin, 'live');
      try {
        await registry.metrics();
        expect(live).toHaveBeenCalledTimes(1);
        await Promise.all([registry.metrics(), registry.getMetricsAsJSON()]);
        expect(live).toHaveBeenCalledTimes(2);
        await registry.metrics();
        expect(live).toHaveBeenCalledTimes(3);
      } finally {
        live.mockRestore();
      }
    });
  });

  it('with queues, reports only those queues and the throttles declared on them', async () => {
    await withMetrics({ queues: ['orders'] }, async (registry) => {
      const text = await registry.metrics();
      expect(seriesValue(text, 'bullmq_throttle_waiting_jobs{throttle="per-customer"}')).toBe(121);
      expect(seriesValue(text, 'bullmq_throttle_queue_held_jobs{queue="orders"}')).toBe(121);
      expect(text).not.toContain('reports');
    });
    await withMetrics({ queues: ['reports', 'no-such-queue'] }, async (registry) => {
      const text = await registry.metrics();
      expect(seriesValue(text, 'bullmq_throttle_effective_limit_jobs{throttle="reports-only",window="1s"}')).toBe(10);
      expect(seriesValue(text, 'bullmq_throttle_queue_held_jobs{queue="reports"}')).toBe(0);
      expect(seriesValue(text, 'bullmq_throttle_metrics_collect_success')).toBe(1);
      expect(text).not.toMatch(/per-customer|everything|emails|orders|no-such-queue/);
    });
  });

  it('a failed read leaves the scrape empty (success 0), without throwing or logging, and the next scrape recovers', async () => {
    const logged = ['log', 'info', 'warn', 'error'].map((level) => jest.spyOn(console, level as 'log').mockImplementation(() => undefined));
    try {
      await withMetrics({}, async (registry, admin) => {
        const live = jest.spyOn(admin, 'live').mockRejectedValueOnce(new Error('Connection is closed.'));
        try {
          const failed = await registry.metrics();
          expect(seriesLines(failed)).toEqual(['bullmq_throttle_metrics_collect_success 0']);
          expect(failed).toContain('# TYPE bullmq_throttle_waiting_jobs gauge');
          const recovered = await registry.metrics();
          expect(seriesValue(recovered, 'bullmq_throttle_waiting_jobs{throttle="per-customer"}')).toBe(121);
          expect(seriesValue(recovered, 'bullmq_throttle_metrics_collect_success')).toBe(1);
        } finally {
          live.mockRestore();
        }
      });
      for (const spy of logged) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of logged) spy.mockRestore();
    }
  });

  it('a Redis outage: empty scrapes with success 0 and nothing logged, then the figures again once it is back', async () => {
    const target = new URL(testRedisUrl());
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
    await proxy.start();
    const logged = ['log', 'info', 'warn', 'error'].map((level) => jest.spyOn(console, level as 'log').mockImplementation(() => undefined));
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: `redis://127.0.0.1:${proxy.port}`, prefix: scenario.bed.prefix, timeoutMs: 300 });
    try {
      expect(seriesValue(await registry.metrics(), 'bullmq_throttle_queue_held_jobs{queue="orders"}')).toBe(121);
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let i = 0; i < 3; i++) expect(seriesLines(await registry.metrics())).toEqual(['bullmq_throttle_metrics_collect_success 0']);
      await proxy.restore();
      await waitFor(async () => seriesValue(await registry.metrics(), 'bullmq_throttle_metrics_collect_success') === 1, 15_000, 'the figures once Redis is back');
      const back = await registry.metrics();
      expect(seriesValue(back, 'bullmq_throttle_queue_held_jobs{queue="orders"}')).toBe(121);
      expect(seriesValue(back, 'bullmq_throttle_jobs_limited_total{throttle="per-customer"}')).toBe(121);
      for (const spy of logged) expect(spy.mock.calls).toEqual([]);
    } finally {
      await metrics.close();
      await proxy.cut();
      for (const spy of logged) spy.mockRestore();
    }
  });

  it('close() removes the metrics and leaves a passed-in ThrottleAdmin open', async () => {
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: scenario.admin });
    expect(() => registerThrottleMetrics(registry, { connection: scenario.admin })).toThrow(/already been registered/);
    expect(registry.getSingleMetric('bullmq_throttle_waiting_jobs')).toBeDefined();
    await metrics.close();
    await metrics.close();
    expect(registry.getMetricsAsArray()).toHaveLength(0);
    expect((await scenario.admin.live()).queues).toContain('orders');
    const again = registerThrottleMetrics(registry, { connection: scenario.admin });
    expect(seriesValue(await registry.metrics(), 'bullmq_throttle_waiting_jobs{throttle="per-customer"}')).toBe(121);
    await again.close();
  });

  it('opens and closes its own connection from a URL and prefix', async () => {
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: testRedisUrl(), prefix: scenario.bed.prefix, queues: ['orders'] });
    try {
      const text = await registry.metrics();
      expect(seriesValue(text, 'bullmq_throttle_queue_waiting_jobs{queue="orders"}')).toBe(121);
      expect(seriesValue(text, 'bullmq_throttle_jobs_limited_total{throttle="per-customer"}')).toBe(121);
    } finally {
      await metrics.close();
    }
  });

  it('rejects contradictory or malformed options', () => {
    const registry = new Registry();
    expect(() => registerThrottleMetrics(registry, { connection: scenario.admin, prefix: 'other' })).toThrow(/differs from the ThrottleAdmin/);
    expect(() => registerThrottleMetrics(registry, { connection: scenario.admin, queues: 'orders' as never })).toThrow(/queues must be an array/);
    expect(() => registerThrottleMetrics(registry, { connection: scenario.admin, timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(registry.getMetricsAsArray()).toHaveLength(0);
  });
});

describe('registerThrottleMetrics: series of throttles and queues that go away', () => {
  it('disappear at the next scrape', async () => {
    const redis = newRedis();
    const bed = new WorkerTestBed('metrics-gone');
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: redis, prefix: bed.prefix });
    try {
      bed.worker('stays', async () => undefined, { throttles: [Throttle.named('t-stays').limit(5, '1s')] });
      const leaving = bed.worker('leaves', async () => undefined, { throttles: [Throttle.named('t-leaves').limit(7, '2s')] });
      await waitFor(async () => seriesValue(await registry.metrics(), 'bullmq_throttle_effective_limit_jobs{throttle="t-leaves",window="2s"}') === 7, 15_000, 'both throttles reported');
      const before = await registry.metrics();
      expect(seriesValue(before, 'bullmq_throttle_effective_limit_jobs{throttle="t-stays",window="1s"}')).toBe(5);
      expect(seriesValue(before, 'bullmq_throttle_queue_held_jobs{queue="leaves"}')).toBe(0);
      await leaving.close();
      const after = await registry.metrics();
      expect(seriesValue(after, 'bullmq_throttle_effective_limit_jobs{throttle="t-stays",window="1s"}')).toBe(5);
      expect(seriesValue(after, 'bullmq_throttle_queue_held_jobs{queue="stays"}')).toBe(0);
      expect(after).not.toMatch(/t-leaves|"leaves"/);
    } finally {
      await metrics.close();
      await bed.close(redis);
      await redis.quit();
    }
  });
});

describe('registerThrottleMetrics when Redis cannot be read', () => {
  let silent: Server;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts connections, reads and never answers: every command hangs.
    silent = createServer((socket) => {
      sockets.push(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  function quietConsole() {
    return ['log', 'info', 'warn', 'error'].map((level) => jest.spyOn(console, level as 'log').mockImplementation(() => undefined));
  }

  it('a Redis that does not answer: the scrape ends after timeoutMs with no throttle series, logging nothing', async () => {
    const logged = quietConsole();
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: `redis://127.0.0.1:${port}`, timeoutMs: 300 });
    try {
      const started = Date.now();
      const text = await registry.metrics();
      expect(Date.now() - started).toBeLessThan(2000);
      expect(seriesLines(text)).toEqual(['bullmq_throttle_metrics_collect_success 0']);
      expect(seriesLines(await registry.metrics())).toEqual(['bullmq_throttle_metrics_collect_success 0']);
      expect((await registry.getMetricsAsJSON()).flatMap((m) => m.values.map((v) => [m.name, v.value]))).toEqual([['bullmq_throttle_metrics_collect_success', 0]]);
    } finally {
      await metrics.close();
      for (const spy of logged) {
        expect(spy).not.toHaveBeenCalled();
        spy.mockRestore();
      }
    }
  });

  it('nothing listening (and no reconnecting): the scrape fails at once, reports no throttle series, logs nothing', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const logged = quietConsole();
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: { host: '127.0.0.1', port: deadPort, retryStrategy: () => null }, timeoutMs: 10_000 });
    try {
      const started = Date.now();
      expect(seriesLines(await registry.metrics())).toEqual(['bullmq_throttle_metrics_collect_success 0']);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await metrics.close();
      for (const spy of logged) {
        expect(spy).not.toHaveBeenCalled();
        spy.mockRestore();
      }
    }
  });

  it('a closed ThrottleAdmin: commands fail at once, the scrape is empty', async () => {
    const admin = new ThrottleAdmin({ connection: testRedisUrl(), prefix: 'test-metrics-closed' });
    await admin.close();
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: admin, timeoutMs: 10_000 });
    try {
      const started = Date.now();
      expect(seriesLines(await registry.metrics())).toEqual(['bullmq_throttle_metrics_collect_success 0']);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await metrics.close();
    }
  });
});

describe('prom-client is an optional peer dependency', () => {
  it('the module loads without it; registering says what to install', () => {
    jest.isolateModules(() => {
      jest.doMock('prom-client', () => {
        throw new Error("Cannot find module 'prom-client'");
      });
      // eslint-disable-next-line @typescript-eslint/no-var-requires
      const isolated = require('../../src/metrics/registerThrottleMetrics') as typeof import('../../src/metrics/registerThrottleMetrics');
      expect(typeof isolated.registerThrottleMetrics).toBe('function');
      expect(() => isolated.registerThrottleMetrics({} as Registry, { connection: 'redis://127.0.0.1:1' })).toThrow(/needs prom-client.*npm install prom-client/);
    });
    jest.dontMock('prom-client');
  });
});
