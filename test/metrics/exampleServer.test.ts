import { Registry } from 'prom-client';
import { serveMetrics } from '../../src/metrics/exampleServer';
import { registerThrottleMetrics } from '../../src/metrics/registerThrottleMetrics';
import { testRedisUrl } from '../support/testRedis';
import { MetricsScenario, seriesValue, startScenario } from './scenario';

describe('the example metrics server', () => {
  let scenario: MetricsScenario;
  beforeAll(async () => {
    scenario = await startScenario('metrics-server');
  });
  afterAll(async () => {
    await scenario.close();
  });

  it('serves GET /metrics from the registry on a free port, and 404 elsewhere', async () => {
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: testRedisUrl(), prefix: scenario.bed.prefix });
    const server = await serveMetrics(registry, { port: 0 });
    try {
      expect(server.port).toBeGreaterThan(0);
      expect(server.url).toBe(`http://127.0.0.1:${server.port}/metrics`);
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
      const text = await response.text();
      expect(seriesValue(text, 'bullmq_throttle_waiting_jobs{throttle="per-customer"}')).toBe(121);
      expect(seriesValue(text, 'bullmq_throttle_queue_held_jobs{queue="orders"}')).toBe(121);
      expect(seriesValue(text, 'bullmq_throttle_effective_limit_jobs{throttle="per-customer",window="1m"}')).toBe(2);
      expect(seriesValue(text, 'bullmq_throttle_metrics_collect_success')).toBe(1);
      expect(text).not.toContain('acme');
      const withQuery = await fetch(`${server.url}?x=1`);
      expect(withQuery.status).toBe(200);
      await withQuery.text();
      const other = await fetch(`http://127.0.0.1:${server.port}/`);
      expect(other.status).toBe(404);
      await other.text();
      const post = await fetch(server.url, { method: 'POST' });
      expect(post.status).toBe(404);
      await post.text();
    } finally {
      await server.close();
      await metrics.close();
    }
    await expect(fetch(server.url)).rejects.toThrow();
  });

  it('a port in use is an error at start', async () => {
    const registry = new Registry();
    const first = await serveMetrics(registry, { port: 0 });
    try {
      await expect(serveMetrics(registry, { port: first.port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.close();
    }
  });
});
