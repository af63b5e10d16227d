/**
 * The sources of the consumer apps: a typed one (compiled, never run) that uses the public API the way the
 * README shows, passing the app's own ioredis clients as `connection`, and two scripts run by node, one
 * CommonJS and one ESM, that grant against the test Redis.
 */

export interface TypedConsumerOptions {
  /** prom-client installed: registerThrottleMetrics is called with its Registry. Otherwise only our types are used. */
  promClient: boolean;
  /** A second ioredis copy installed under this name (npm alias): its clients are passed too. */
  otherIoredis?: string;
}

export function typedConsumer({ promClient, otherIoredis }: TypedConsumerOptions): string {
  const imports = [
    "import { Cluster, Redis } from 'ioredis';",
    "import { Queue } from 'bullmq';",
    'import {',
    '  Grantor, Key, Missing, Throttle, ThrottleAdmin, ThrottledWorker, getThrottledCount, mostInAnyWindow, registerThrottleMetrics,',
    '  type ConnectionInput, type GrantResult, type IORedisClient, type MetricsRegistry, type QueueStats, type ThrottleMetrics,',
    '  type ThrottledWorkerOptions,',
    "} from 'bullmq-throttle';",
  ];
  if (promClient) imports.push("import { Registry, type OpenMetricsContentType } from 'prom-client';");
  if (otherIoredis) imports.push(`import { Cluster as OtherCluster, Redis as OtherRedis } from '${otherIoredis}';`);

  const metrics = promClient
    ? `
  const metrics: ThrottleMetrics = registerThrottleMetrics(new Registry(), { connection: admin, queues: ['orders'] });
  const openMetrics: MetricsRegistry = new Registry<OpenMetricsContentType>();
  await registerThrottleMetrics(openMetrics, { connection: redis }).close();
  await metrics.close();`
    : '';
  const other = otherIoredis
    ? `
  // Clients of another ioredis copy than the one these declarations resolve.
  const otherRedis = new OtherRedis(url, { lazyConnect: true });
  const otherCluster = new OtherCluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true });
  const fromOtherCopy: ConnectionInput[] = [otherRedis, otherCluster];
  const otherClient: IORedisClient = otherRedis;
  await new Grantor({ connection: otherRedis }).close();
  await new ThrottleAdmin({ connection: otherCluster }).close();
  ${promClient ? 'await registerThrottleMetrics(new Registry(), { connection: otherRedis }).close();' : ''}
  count += fromOtherCopy.length + otherClient.status.length;`
    : '';

  return `${imports.join('\n')}

export function withMetrics(registry: MetricsRegistry): ThrottleMetrics {
  return registerThrottleMetrics(registry, { connection: 'redis://127.0.0.1:6379', prefix: 'bull', timeoutMs: 1000 });
}

export async function consume(url: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const cluster = new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true });
  const connections: ConnectionInput[] = [redis, cluster, url, { host: '127.0.0.1', port: 6379 }];

  const stripe = Throttle.named('stripe').limit(100, '1s');
  const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).whenKeyMissing(Missing.Unthrottled).limit(10, '1s');
  // @ts-expect-error a window is a number and a unit: '1 sec' does not compile
  Throttle.named('misspelled').limit(10, '1 sec');

  const grantor = new Grantor({ connection: redis, prefix: 'bull' });
  const clusterGrantor = new Grantor({ connection: cluster });
  const results: GrantResult[] = await grantor.grant([[{ throttle: stripe }, { throttle: perCustomer, key: ['acme'] }]]);

  const admin = new ThrottleAdmin({ connection: redis });
  const clusterAdmin = new ThrottleAdmin({ connection: cluster });
  const stats: QueueStats = await admin.queueStats('orders');

  const options: ThrottledWorkerOptions = { connection: redis, concurrency: 5, throttles: [stripe, perCustomer], autorun: false };
  const worker = new ThrottledWorker<{ customer: string }, string>('orders', async (job) => job.data.customer, options);
  const clusterWorker = new ThrottledWorker('orders', null, { connection: cluster, throttles: [stripe], autorun: false });
  const queue = new Queue('orders', { connection: redis });
  const { throttled } = await getThrottledCount(queue);
  let count = connections.length + results.length + stats.throttles.length + throttled + mostInAnyWindow([1, 2], 10);
${metrics}${other}
  await Promise.all([worker.close(), clusterWorker.close(), queue.close(), grantor.close(), clusterGrantor.close(), admin.close(), clusterAdmin.close()]);
  return count;
}
`;
}

/** CommonJS: require() the package, grant twice from a one-per-10s throttle. Prints one JSON line. */
export const CJS_SCRIPT = `const { Grantor, Throttle } = require('bullmq-throttle');
const { Redis } = require('ioredis');

(async () => {
  const [url, prefix] = process.argv.slice(2);
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const grantor = new Grantor({ connection: redis, prefix });
  const once = Throttle.named('once').limit(1, '10s');
  const results = await grantor.grant([[{ throttle: once }], [{ throttle: once }]]);
  await grantor.close();
  await redis.quit();
  console.log(JSON.stringify({
    resolved: require.resolve('bullmq-throttle'),
    ioredis: require('ioredis/package.json').version,
    granted: results.map((r) => r.granted),
  }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

/**
 * ESM: import the package, grant as the CommonJS script does, then run one job through a ThrottledWorker (whose
 * delivery script includes the installed bullmq's Lua, found through require.resolve). Prints one JSON line.
 */
export const ESM_SCRIPT = `import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Grantor, Throttle, ThrottledWorker } from 'bullmq-throttle';
import { Redis } from 'ioredis';

const [url, prefix] = process.argv.slice(2);
const resolved = fileURLToPath(import.meta.resolve('bullmq-throttle'));
const redis = new Redis(url, { maxRetriesPerRequest: null });
const grantor = new Grantor({ connection: redis, prefix });
const once = Throttle.named('once').limit(1, '10s');
const results = await grantor.grant([[{ throttle: once }], [{ throttle: once }]]);

const queue = new Queue('orders', { connection: redis, prefix });
await queue.add('one', { n: 41 });
const worker = new ThrottledWorker('orders', async (job) => job.data.n + 1, {
  connection: redis, prefix, throttles: [Throttle.named('orders').limit(5, '1s')],
});
const result = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('no job completed within 20 s')), 20000);
  worker.on('completed', (_job, value) => { clearTimeout(timer); resolve(value); });
  worker.on('failed', (_job, error) => reject(error));
  worker.on('error', reject);
});
await worker.close();
await queue.close();
await grantor.close();
await redis.quit();
console.log(JSON.stringify({
  resolved,
  exportsEsm: /^export \\{/m.test(readFileSync(resolved, 'utf8')),
  granted: results.map((r) => r.granted),
  result,
}));
`;

/**
 * The Bull Board entry point from the packed install, as CommonJS and as ESM: a ThrottledBullMQAdapter over a queue
 * with one job, its counts read from Redis. Prints one JSON line.
 */
export const BULL_BOARD_CJS_SCRIPT = `const { Queue } = require('bullmq');
const { ThrottledBullMQAdapter } = require('bullmq-throttle/bull-board');

(async () => {
  const [url, prefix] = process.argv.slice(2);
  const queue = new Queue('board', { connection: { url, maxRetriesPerRequest: null }, prefix });
  await queue.add('one', {});
  const adapter = new ThrottledBullMQAdapter(queue);
  const counts = await adapter.getJobCounts();
  await adapter.close();
  await queue.obliterate({ force: true });
  await queue.close();
  console.log(JSON.stringify({ resolved: require.resolve('bullmq-throttle/bull-board'), waiting: counts.waiting }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

export const BULL_BOARD_ESM_SCRIPT = `import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { ThrottledBullMQAdapter } from 'bullmq-throttle/bull-board';

const [url, prefix] = process.argv.slice(2);
const queue = new Queue('board', { connection: { url, maxRetriesPerRequest: null }, prefix });
await queue.add('one', {});
const adapter = new ThrottledBullMQAdapter(queue);
const counts = await adapter.getJobCounts();
await adapter.close();
await queue.obliterate({ force: true });
await queue.close();
console.log(JSON.stringify({ resolved: fileURLToPath(import.meta.resolve('bullmq-throttle/bull-board')), waiting: counts.waiting }));
`;

/**
 * The dashboard from the packed install (CommonJS): createDashboardHandler in a node:http server on a free port,
 * its page, script and data endpoint fetched. The page must come from the package's dist/dashboard, built at
 * `npm run build`, since a published install has no esbuild to build it. Prints one JSON line.
 */
export const DASHBOARD_CJS_SCRIPT = `const http = require('node:http');
const { createDashboardHandler } = require('bullmq-throttle');

(async () => {
  const [url, prefix] = process.argv.slice(2);
  const handler = createDashboardHandler({ connection: url, prefix });
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = 'http://127.0.0.1:' + server.address().port + '/';
  const answers = {};
  for (const path of ['', 'app.js', 'api/overview']) {
    const response = await fetch(base + path);
    const body = await response.text();
    answers[path || 'page'] = { status: response.status, type: response.headers.get('content-type'), bytes: body.length };
  }
  server.close();
  await handler.close();
  console.log(JSON.stringify({ resolved: require.resolve('bullmq-throttle'), answers }));
})().catch((error) => { console.error(error); process.exit(1); });
`;
