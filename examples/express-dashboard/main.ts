// `npm start`: serves the app until Ctrl-C, adding a batch of reports every 20 s so that both pages have jobs
// to show. `npm test` runs `main.ts --check`: the same app on a free port, whose two pages are read back over
// HTTP to check that they show the held jobs, and whose render times show that the limit held.
import { mostInAnyWindow } from 'bullmq-throttle';
import type { QueueStats, ThrottleStats } from 'bullmq-throttle';
import { App, LIMIT, QUEUE, THROTTLE, startApp } from './app';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CUSTOMERS = ['acme', 'globex', 'initech'];
const PER_CUSTOMER = 6;

// What is read here of the dashboard's JSON (docs/dashboard.md lists all of it) and of Bull Board's.
interface Overview {
  queues: QueueStats[];
  throttles: (ThrottleStats & { state: 'flowing' | 'at-limit' | 'paused' | 'recovering' })[];
}
interface BoardQueues {
  queues: { name: string; counts: Record<string, number>; jobs: { id: string; name: string }[] }[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Producers change nothing: a plain bullmq Queue adds the jobs.
async function addBatch(app: App): Promise<void> {
  await app.queue.addBulk(CUSTOMERS.flatMap((customer) => Array.from({ length: PER_CUSTOMER }, (_, i) => ({
    name: 'render',
    data: { customer, report: `${customer}-${i + 1}` },
  }))));
}

/** The most renders of one customer that began in any window of the limit's length. */
function mostPerCustomer(app: App): number {
  return Math.max(0, ...CUSTOMERS.map((c) => mostInAnyWindow(app.starts.filter((s) => s.customer === c).map((s) => s.at), LIMIT.windowMs)));
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

async function waitFor<T>(what: string, read: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function serve(): Promise<void> {
  const app = await startApp(REDIS_URL, Number(process.env.PORT ?? 3000));
  console.log(`throttles' dashboard: ${app.urls.dashboard}`);
  console.log(`Bull Board:           ${app.urls.bullBoard}`);
  console.log('adding 18 reports every 20 s (6 per customer, at most 2 per customer in any 3 s); Ctrl-C stops');
  await addBatch(app);
  const batches = setInterval(() => void addBatch(app), 20_000);
  const stop = async () => {
    clearInterval(batches);
    await app.close();
    const most = mostPerCustomer(app);
    console.log(`${app.starts.length} reports rendered: at most ${most} per customer in any 3 s (limit ${LIMIT.max})`);
    if (most > LIMIT.max) process.exitCode = 1;
    else console.log(`held: at most ${LIMIT.max} renders per customer in any 3 s`);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

async function check(): Promise<void> {
  const app = await startApp(REDIS_URL, 0); // port 0: any free port
  const failures: string[] = [];
  try {
    console.log(`serving ${app.urls.dashboard} and ${app.urls.bullBoard}`);
    await addBatch(app);
    const total = CUSTOMERS.length * PER_CUSTOMER;

    // The dashboard's JSON, as its page reads it: once the first renders have begun, every other job of the
    // batch is held by a full bucket (a read while the worker is still taking them in shows fewer).
    const { queue, throttle } = await waitFor('the dashboard to show the held jobs', async () => {
      const overview = await getJson<Overview>(`${app.urls.dashboard}api/overview`);
      const queue = overview.queues.find((q) => q.queue === QUEUE);
      const throttle = overview.throttles.find((t) => t.name === THROTTLE);
      const held = total - app.starts.length;
      return queue && throttle && held > 0 && queue.heldByFullBuckets === held && throttle.waiting === held ? { queue, throttle } : undefined;
    });
    console.log(`dashboard api/overview: ${QUEUE} holds ${queue.throttled} jobs, ${queue.heldByFullBuckets} by full buckets; ` +
      `${THROTTLE} is ${throttle.state}, ${throttle.waiting} waiting, busiest bucket ${JSON.stringify(throttle.topBuckets[0]?.key)}`);

    // The page itself, its links under the mount path.
    const page = await fetch(app.urls.dashboard);
    const html = await page.text();
    if (!/text\/html/.test(page.headers.get('content-type') ?? '') || !html.includes('<base href="/admin/throttles/">')) {
      failures.push(`the dashboard's page did not come back as HTML under /admin/throttles/ (${page.status})`);
    }

    // Bull Board's API, as its waiting tab reads it: held jobs counted as waiting, each named with its bucket.
    const board = await getJson<BoardQueues>(`${app.urls.bullBoard}api/queues?activeQueue=${QUEUE}&status=waiting&page=1&jobsPerPage=10`);
    const reports = board.queues.find((q) => q.name === QUEUE);
    const bullmqAlone = (await app.queue.getJobCounts('wait')).wait;
    const named = reports?.jobs.filter((j) => j.name.includes(` · held by ${THROTTLE}[`)).length ?? 0;
    console.log(`bull board api/queues: ${QUEUE} waiting ${reports?.counts.waiting} (bullmq's own count: ${bullmqAlone}); ` +
      `${named} of the ${reports?.jobs.length} listed named by their bucket, first "${reports?.jobs[0]?.name}"`);
    if (!reports || !(reports.counts.waiting > 0) || named === 0) failures.push('Bull Board did not count or name the held jobs');

    // Then every render, and the limit from the moments they began.
    await waitFor('every report to render', () => (app.starts.length >= total ? true : undefined), 60_000);
    const most = mostPerCustomer(app);
    const seconds = (Math.max(...app.starts.map((s) => s.at)) - Math.min(...app.starts.map((s) => s.at))) / 1000;
    console.log(`${total} reports in ${seconds.toFixed(1)} s: at most ${most} per customer in any 3 s (limit ${LIMIT.max})`);
    if (most > LIMIT.max) failures.push(`${most} renders of one customer began within 3 s`);
  } finally {
    await app.close();
  }
  if (failures.length > 0) {
    console.error(failures.join('\n'));
    process.exit(1);
  }
  console.log(`held: both pages showed the held jobs, and at most ${LIMIT.max} renders per customer began in any 3 s`);
}

(process.argv.includes('--check') ? check() : serve()).catch((error) => {
  console.error(error);
  process.exit(1);
});
