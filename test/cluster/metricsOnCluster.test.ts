import { Registry } from 'prom-client';
import { ThrottleAdmin } from '../../src';
import { connectionFromEnv } from '../../src/metrics/exampleServer';
import { registerThrottleMetrics, ThrottleMetricsOptions } from '../../src/metrics/registerThrottleMetrics';
import { ClusterOpsScenario, HELD, SHARED_NAMESPACE, SHARED_QUEUE, startClusterOpsScenario, STRIPE } from '../support/clusterOpsScenario';
import { seriesValue } from '../metrics/scenario';

// registerThrottleMetrics on a Redis Cluster (see clusterOpsScenario).
let s: ClusterOpsScenario;

beforeAll(async () => { s = await startClusterOpsScenario(); }, 120_000);
afterAll(async () => { await s?.close(); });

async function scrape(options: ThrottleMetricsOptions): Promise<string> {
  const registry = new Registry();
  const metrics = registerThrottleMetrics(registry, options);
  try {
    return await registry.metrics();
  } finally {
    await metrics.close();
  }
}

const EXPECTED: Record<string, number> = {
  bullmq_throttle_metrics_collect_success: 1,
  'bullmq_throttle_waiting_jobs{throttle="stripe"}': STRIPE.waiting,
  'bullmq_throttle_jobs_delivered_total{throttle="stripe"}': STRIPE.delivered,
  'bullmq_throttle_active_buckets{throttle="stripe"}': STRIPE.activeBuckets,
  'bullmq_throttle_buckets_at_limit{throttle="stripe"}': STRIPE.bucketsAtLimit,
  'bullmq_throttle_window_delivered_jobs{throttle="stripe",window="1m"}': STRIPE.delivered,
  'bullmq_throttle_queue_held_jobs{queue="{bull}orders"}': HELD['{bull}orders'],
  'bullmq_throttle_queue_held_jobs{queue="{bull}refunds"}': HELD['{bull}refunds'],
  'bullmq_throttle_queue_held_jobs{queue="{refunds}"}': HELD['{refunds}'],
  'bullmq_throttle_queue_held_jobs{queue="{invoices}"}': HELD['{invoices}'],
  'bullmq_throttle_queue_held_jobs{queue="{orders}"}': 0,
  'bullmq_throttle_declaring_workers{queue="{orders}",throttle="stripe"}': 1,
  'bullmq_throttle_declaring_workers{queue="{invoices}",throttle="stripe"}': 1,
  'bullmq_throttle_queue_plain_workers{queue="{orders}"}': 1,
  'bullmq_throttle_queue_plain_workers{queue="{invoices}"}': 0,
};

function expectFigures(text: string, expected: Record<string, number>): void {
  const found = Object.fromEntries(Object.keys(expected).map((series) => [series, seriesValue(text, series)]));
  expect(found).toEqual(expected);
}

test('on a Cluster client the app owns: every figure, from the nodes holding each queue', async () => {
  const text = await scrape({ connection: s.client });
  expectFigures(text, EXPECTED);
  // Leased tokens of '{refunds}' and '{invoices}', added up from their nodes (any that expired unused).
  expect(seriesValue(text, 'bullmq_throttle_tokens_expired_total{throttle="stripe"}')).toBeGreaterThanOrEqual(0);
  expect(seriesValue(text, 'bullmq_throttle_waiting_jobs{throttle="partner"}')).toBeUndefined();
  expect(s.client.status).toBe('ready'); // not closed: the app's
});

test('from Cluster seeds (a connection the metrics open and close), and from seeds as the example server reads them', async () => {
  expectFigures(await scrape({ connection: { startupNodes: s.cluster.seeds } }), EXPECTED);
  const env = s.cluster.seeds.map((seed) => `redis://${seed.host}:${seed.port}`).join(',');
  expectFigures(await scrape({ connection: connectionFromEnv(env) }), EXPECTED);
});

test('throttlePrefix reports another namespace\'s throttles', async () => {
  const text = await scrape({ connection: s.client, throttlePrefix: SHARED_NAMESPACE });
  expectFigures(text, {
    'bullmq_throttle_waiting_jobs{throttle="partner"}': 2,
    'bullmq_throttle_jobs_delivered_total{throttle="partner"}': 1,
    'bullmq_throttle_window_delivered_jobs{throttle="partner",window="1m"}': 1,
    [`bullmq_throttle_queue_held_jobs{queue="${SHARED_QUEUE}"}`]: 2,
  });
  expect(seriesValue(text, 'bullmq_throttle_waiting_jobs{throttle="stripe"}')).toBeUndefined();
});

test('a ThrottleAdmin and a throttlePrefix that disagree are refused', () => {
  const admin = new ThrottleAdmin({ connection: s.client });
  try {
    expect(() => registerThrottleMetrics(new Registry(), { connection: admin, throttlePrefix: SHARED_NAMESPACE }))
      .toThrow(/throttlePrefix '\{shared\}' differs from the ThrottleAdmin's 'bull'/);
  } finally {
    void admin.close();
  }
});
