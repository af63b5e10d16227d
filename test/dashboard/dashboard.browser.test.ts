import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser, TestBrowser } from '../support/browser';
import { waitFor } from '../support/bullmq';
import { ARTIFACTS, attributeAtLeast, collectErrors, drawnPixels, expectText, text } from './pageChecks';
import { DashboardServer, EXPECTED, QUEUE, Scenario, startDashboard, startScenario, THROTTLE } from './scenario';


// The dashboard in headless Chromium against a live scenario with known answers: the overview's figures and
// charts, a bucket's page, a job's, and a pause clicked on the page that stops that bucket's deliveries only.
describe('dashboard in a browser', () => {
  let scenario: Scenario | undefined;
  let dashboard: DashboardServer | undefined;
  let browser: TestBrowser | undefined;
  beforeAll(() => mkdirSync(ARTIFACTS, { recursive: true }));
  afterEach(async () => {
    await browser?.close();
    await dashboard?.close();
    await scenario?.close();
    [browser, dashboard, scenario] = [undefined, undefined, undefined];
  });

  it('shows the live figures, charts, a bucket, a job, and pauses a bucket from the page', async () => {
    scenario = await startScenario('dash-ui');
    dashboard = await startDashboard({ prefix: scenario.bed.prefix, writes: true });
    browser = await launchBrowser();
    const page = await browser.browser.newPage({ viewport: { width: 1280, height: 1300 } });
    const pageErrors = collectErrors(page);
    await page.goto(`${dashboard.url}/`);

    // The overview: the queue's held jobs, the throttle's buckets and its top waiting bucket.
    const card = `[data-throttle="${THROTTLE}"]`;
    await expectText(page, `${card} [data-field="bucketsAtLimit"]`, String(EXPECTED.bucketsAtLimit));
    await expectText(page, `${card} [data-field="activeBuckets"]`, String(EXPECTED.activeBuckets));
    await expectText(page, `${card} [data-field="waiting"]`, String(EXPECTED.waiting));
    await expectText(page, `${card} [data-field="tokensExpired"]`, '0');
    await expectText(page, `${card} [data-field="lastWindow-600000"]`, `${EXPECTED.delivered} in the last 10m, all buckets`);
    await expectText(page, `${card} [data-field="limitSource"]`, `declared by 1 live worker(s) on ${QUEUE}`);
    await expectText(page, `${card} [data-field="topBuckets"] tbody tr:first-child td:nth-child(2)`, String(EXPECTED.acmeWaiting));
    expect(await text(page, `${card} [data-field="topBuckets"] tbody tr:first-child td:first-child`)).toBe('acme');
    // 120 jobs at 2 per 10m (0.00333/s) per bucket: the longest bucket drains in about 10 hours.
    await expectText(page, `${card} [data-field="drain"]`, /^drains in ~(9h 5\dm|10h( \dm)?) at 0\.00333\/s$/);
    expect(await page.getAttribute(card, 'data-state')).toBe('at-limit');
    await expectText(page, `[data-queue="${QUEUE}"] [data-field="throttled"]`, String(EXPECTED.waiting));
    await expectText(page, `[data-queue="${QUEUE}"] [data-field="heldByFullBuckets"]`, String(EXPECTED.waiting));
    await expectText(page, `[data-queue="${QUEUE}"] [data-field="oldestHeld"]`, /^\d+(\.\d)?(ms|s)$/);
    // A live ThrottledWorker delivers the queue's held jobs: the server would refuse a release, so none is offered.
    expect(await page.locator('[data-action="release"]').count()).toBe(0);
    await expectText(page, '#status', /^live · /);

    // The chart draws a point per sample, and more arrive without reloading (server-sent events). Against the
    // per-bucket N it plots the busiest waiting bucket (acme, at its limit), never above N; the 8 deliveries of
    // all buckets together are on a figure of their own, with no N line.
    const chart = `${card} figure.chart[data-window-ms="600000"]`;
    const points = await attributeAtLeast(page, chart, 'data-points', 3);
    await attributeAtLeast(page, chart, 'data-points', points + 1);
    expect(await page.getAttribute(chart, 'data-max')).toBe('2');
    expect(await page.getAttribute(chart, 'data-last')).toBe('2');
    expect(await page.getAttribute(chart, 'data-busiest-key')).toBe('["acme"]');
    expect(Number(await page.getAttribute(chart, 'data-peak'))).toBeLessThanOrEqual(2);
    await expectText(page, `${chart} > [data-field="latest"]`, 'now: acme, 2 of 2');
    const total = `${chart} figure.chart-total`;
    expect(await page.getAttribute(total, 'data-last')).toBe(String(EXPECTED.delivered));
    expect(await page.getAttribute(total, 'data-peak')).toBe(String(EXPECTED.delivered));
    expect(await page.locator(`${total} .u-legend`).textContent()).not.toMatch(/limit/);
    expect(await drawnPixels(page, `${chart} > .plot canvas`)).toBeGreaterThan(0);
    expect(await drawnPixels(page, `${total} canvas`)).toBeGreaterThan(0);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-overview.png'), fullPage: true });

    // The bucket page, from the top waiting bucket's link.
    await page.click(`${card} [data-field="topBuckets"] a:text-is("acme")`);
    await expectText(page, '[data-field="counted"]', '2/2');
    await expectText(page, '[data-field="waiting"]', String(EXPECTED.acmeWaiting));
    await expectText(page, '[data-field="bindingNow"]', '2 per 10m');
    await expectText(page, '[data-field="roomReturns"]', /^in \d+m/);
    await expectText(page, `[data-field="jobs"] [data-queue="${QUEUE}"] h3`, `queue ${QUEUE}: ${EXPECTED.acmeWaiting} waiting (the first 20)`);
    expect(await page.locator('a[data-job]').count()).toBe(20);
    expect(await text(page, 'a[data-job]')).toBe(scenario.jobIds.acme[2]);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-bucket.png'), fullPage: true });

    // The job page, from the bucket's first waiting job.
    await page.click('a[data-job]');
    await expectText(page, '[data-field="state"]', 'held');
    await expectText(page, '[data-field="reason"]', /^waiting: per-customer \[acme\] is full \(2\/2 per 10m\); room returns in (\d+(\.\d)?s|\d+m( \d+s)?); (first in line there|\d+ jobs? ahead of it there, it goes in about \d+m( \d+s)?)$/);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job.png'), fullPage: true });

    // Pause delta's bucket (1 of 2 counted: it has room) from its page; then a job for delta and one for
    // epsilon (also 1 of 2): epsilon's goes, delta's is held by the pause.
    await page.goto(`${dashboard.url}/#/bucket?throttle=${THROTTLE}&key=${encodeURIComponent('["delta"]')}`);
    await expectText(page, '[data-field="counted"]', '1/2');
    expect(await page.isVisible('[data-action="resume"]')).toBe(false);
    // An empty duration pauses until resumed: the page asks first, naming that, and nothing is written before.
    await page.click('[data-action="pause"]');
    await expectText(page, '[data-role="confirm"] [data-field="question"]', /^Pause this bucket of per-customer until resumed\?/);
    expect((await scenario.admin.throttleBucket(THROTTLE, ['delta'])).paused).toBeNull();
    await page.click('[data-role="confirm"] [data-action="confirm"]');
    await expectText(page, '[data-role="result"]', 'pause this bucket: done');
    const pausedAfter = scenario.delivered.length;
    expect((await scenario.admin.throttleBucket(THROTTLE, ['delta'])).paused).toEqual({ until: null });
    await expectText(page, '[data-field="paused"]', 'paused until resumed');
    await expectText(page, '[data-field="roomReturns"]', 'when resumed');
    expect(await page.getAttribute('section.bucket', 'data-state')).toBe('paused');
    await page.waitForSelector('[data-action="resume"]', { state: 'visible' });
    const [deltaJob] = await scenario.queue.addBulk([{ name: 'call', data: { customer: 'delta' } }]);
    const [epsilonJob] = await scenario.queue.addBulk([{ name: 'call', data: { customer: 'epsilon' } }]);
    await waitFor(() => scenario!.delivered.some((d) => d.id === epsilonJob.id), 20_000, "epsilon's new job delivered");
    await waitFor(async () => (await scenario!.admin.explainJob(QUEUE, deltaJob.id!)).held === 'waiting-on-bucket', 20_000, "delta's new job held");
    expect((await scenario.admin.explainJob(QUEUE, deltaJob.id!)).reason).toMatch(/^waiting: per-customer \[delta\] is paused until resumed/);
    const afterClick = scenario.delivered.slice(pausedAfter);
    expect(afterClick.map((d) => d.customer)).toEqual(['epsilon']);
    await expectText(page, '[data-field="waiting"]', '1');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-paused.png'), fullPage: true });

    await page.goto(`${dashboard.url}/#/`);
    await expectText(page, `${card} [data-field="pausedBuckets"]`, '1 bucket(s) paused on their own');
    expect(pageErrors).toEqual([]);
  });
});
