import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import { Job } from 'bullmq';
import express from 'express';
import { Redis } from 'ioredis';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Server } from 'node:http';
import { getThrottledCount, Key, Throttle } from '../../src';
import { ThrottledBullMQAdapter } from '../../src/bullBoard';
import { launchBrowser, TestBrowser } from '../support/browser';
import { newRedis } from '../support/redis';
import { waitFor, WorkerTestBed } from '../support/bullmq';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');
const CUSTOMERS = ['acme', 'globex', 'initech'];
const HELD = 27;

// Bull Board (@bull-board/express) in headless Chromium, with the adapter: the waiting tab lists held jobs with
// the bucket holding each, and counts them.
describe('Bull Board in a browser', () => {
  let redis: Redis;
  let bed: WorkerTestBed;
  let adapter: ThrottledBullMQAdapter | undefined;
  let server: Server | undefined;
  let browser: TestBrowser | undefined;
  beforeEach(() => {
    redis = newRedis();
    bed = new WorkerTestBed('bullboard-ui');
  });
  afterEach(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await adapter?.close();
    await bed.close(redis);
    await redis.quit();
  });

  it('lists held jobs on the waiting tab, each named with its bucket, and counts them as waiting', async () => {
    const queue = bed.queue('payments');
    const delivered: string[] = [];
    const perCustomer = Throttle.named('stripe-per-customer').key([Key.data('customer')]).limit(1, '1m');
    bed.worker('payments', async (job: Job) => { delivered.push(job.id!); }, { concurrency: 3, throttles: [perCustomer] });
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'charge', data: { customer: CUSTOMERS[i % 3], n: i } })));
    await waitFor(() => delivered.length === 3, 20_000, 'one charge of each customer delivered');
    await waitFor(async () => (await getThrottledCount(queue)).throttled === HELD, 20_000, 'the others held');

    adapter = new ThrottledBullMQAdapter(queue);
    const serverAdapter = new ExpressAdapter().setBasePath('/board');
    createBullBoard({ queues: [adapter], serverAdapter });
    const app = express();
    app.use('/board', serverAdapter.getRouter());
    server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    const { port } = server.address() as AddressInfo;

    browser = await launchBrowser();
    const page = await browser.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    await page.goto(`http://127.0.0.1:${port}/board/queue/payments?status=waiting`);
    const firstHeld = page.getByText('charge · held by stripe-per-customer[acme]').first();
    await firstHeld.waitFor({ timeout: 20_000 });
    // The waiting tab's count: bullmq has no waiting job here, all 27 are held.
    const waitingTab = page.getByRole('link', { name: /waiting/i }).first();
    await waitingTab.waitFor({ timeout: 10_000 });
    expect(await waitingTab.innerText()).toMatch(new RegExp(`\\b${HELD}\\b`));
    // Bull Board's first page holds 10 of the 27: acme's class first (its first job came first), then globex's.
    const marks = async () => (await page.locator('body').innerText()).match(/charge · held by stripe-per-customer\[\w+\]/g) ?? [];
    expect(await marks()).toEqual([...Array(9).fill('charge · held by stripe-per-customer[acme]'), 'charge · held by stripe-per-customer[globex]']);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'bull-board-waiting.png'), fullPage: true });
    // Its third page: the last 7, initech's.
    await page.goto(`http://127.0.0.1:${port}/board/queue/payments?status=waiting&page=3`);
    await page.getByText('charge · held by stripe-per-customer[initech]').first().waitFor({ timeout: 20_000 });
    expect(await marks()).toEqual(Array(7).fill('charge · held by stripe-per-customer[initech]'));
  });
});
