import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchBrowser, TestBrowser } from '../support/browser';
import { done, notYet, waitUntil } from '../support/waitUntil';
import { EXPECTED_STATES, KindsScenario, startKindsScenario } from './limitKindsScenario';
import { ARTIFACTS, attributeAtLeast, collectErrors, drawnPixels, expectText, overflowingElements, tablesOutsideScrolling } from './pageChecks';
import { DashboardServer, Scenario, startDashboard, startScenario, THROTTLE } from './scenario';

const STATE_TEXT: Record<string, string> = { flowing: 'flowing', 'at-limit': 'at its limit', paused: 'paused', recovering: 'recovering' };

async function expectAttribute(page: Page, selector: string, name: string, expected: string): Promise<void> {
  await waitUntil(`${selector} ${name}="${expected}"`, async () => {
    const got = await page.locator(selector).first().getAttribute(name, { timeout: 1000 });
    return got === expected ? done(got) : notYet(`it is ${JSON.stringify(got)}`);
  }, { timeoutMs: 20_000, intervalMs: 100 });
}

/** Waits until nothing sticks out of a narrow viewport (charts are redrawn to the new width as it resizes). */
async function expectNothingClipped(page: Page): Promise<void> {
  await waitUntil('nothing wider than the viewport outside a scrolling container', async () => {
    const found = await overflowingElements(page);
    return found.length === 0 ? done(found) : notYet(found.slice(0, 8).join('; '));
  }, { timeoutMs: 10_000, intervalMs: 200 });
  expect(await tablesOutsideScrolling(page)).toBe(0);
}

// The dashboard "at a glance", in headless Chromium against a scenario with a throttle in each state and of
// each limit kind: each card's state (its colour, as data-state), a chart per limit kind, when backlogs drain,
// hold-time percentiles, the write controls offered, a layout that reads at 400 px; and a history that
// outlives a restart of the dashboard.
describe('dashboard at a glance', () => {
  let kinds: KindsScenario | undefined;
  let scenario: Scenario | undefined;
  let dashboard: DashboardServer | undefined;
  let browser: TestBrowser | undefined;
  beforeAll(() => mkdirSync(ARTIFACTS, { recursive: true }));
  afterEach(async () => {
    await browser?.close();
    await dashboard?.close();
    await kinds?.close();
    await scenario?.close();
    [browser, dashboard, kinds, scenario] = [undefined, undefined, undefined, undefined];
  });

  it('colours each throttle by state, charts every limit kind, estimates drains, shows hold times, and reads at 400 px', async () => {
    kinds = await startKindsScenario('dash-glance');
    dashboard = await startDashboard({ prefix: kinds.bed.prefix, writes: true });
    browser = await launchBrowser();
    const page = await browser.browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors = collectErrors(page);
    await page.goto(`${dashboard.url}/`);

    const card = (name: string) => `section.throttle[data-throttle="${name}"]`;
    for (const [name, state] of Object.entries(EXPECTED_STATES)) {
      await expectAttribute(page, card(name), 'data-state', state);
      await expectText(page, `${card(name)} [data-field="state"]`, STATE_TEXT[state]);
    }
    expect(await page.locator('.legend li[data-state]').evaluateAll((items) => items.map((li) => li.getAttribute('data-state')))).toEqual(['flowing', 'at-limit', 'paused', 'recovering']);

    // A chart per limit kind, each drawing: a window (in units, where jobs count a cost), a rate, a concurrency.
    const window = `${card('open')} figure.chart[data-window-ms="60000"]`;
    const rate = `${card('rate-only')} figure[data-chart="rate"]`;
    const inFlight = `${card('in-flight')} figure[data-chart="in-flight"]`;
    for (const chart of [window, rate, inFlight]) await attributeAtLeast(page, chart, 'data-points', 2);
    expect(await page.getAttribute(window, 'data-last')).toBe('15');
    expect(await page.locator(`${window} > figcaption`).textContent()).toMatch(/^units \(costs\) in the last 1m, against its limit/);
    expect(Number(await page.getAttribute(rate, 'data-rate'))).toBeCloseTo(1 / 600, 10);
    expect(await page.locator(`${card('rate-only')} figure.chart[data-window-ms]`).count()).toBe(0);
    await expectAttribute(page, inFlight, 'data-last', '2');
    expect(await page.getAttribute(inFlight, 'data-max')).toBe('2');
    for (const chart of [window, rate, inFlight]) expect(await drawnPixels(page, `${chart} > .plot canvas`)).toBeGreaterThan(0);
    for (const name of Object.keys(EXPECTED_STATES)) expect(await page.locator(`${card(name)} figure canvas`).count()).toBeGreaterThan(0);
    // The rate-only card's limits table says what the rate lets through now: no blank half.
    await expectText(page, `${card('rate-only')} [data-field="perSecond"]`, /^\d+(\.\d+)?\/s delivered$/);

    // Backlogs and when they drain: 4 jobs at 1 per 10m; a pause until resumed; a concurrency with no processing time yet.
    await expectText(page, `${card('rate-only')} [data-field="drain"]`, /^drains in ~40m( \d+s)? at 0\.00167\/s$/);
    await expectText(page, `${card('stopped')} [data-field="drain"]`, 'drains once resumed');
    await expectText(page, `${card('in-flight')} [data-field="drain"]`, 'drain time unknown (no processing time measured yet)');
    await expectText(page, `${card('open')} [data-field="backlog"]`, 'no backlog');
    await expectText(page, `${card('open')} [data-field="adaptive"]`, 'the 1m limit adapts to 429s between 10 and 1,000: lowered to 500');
    // Jobs that waited, each once (not re-checks), and how long delivered jobs were held.
    await expectText(page, `${card('rate-only')} [data-field="limitedTotal"]`, '4');
    expect(await page.locator(`${card('rate-only')} [data-field="limitedTotal"] + .label`).textContent()).toBe('jobs that waited');
    await expectText(page, `${card('open')} [data-field="holdP50"]`, '≤ 100ms');
    await expectText(page, `${card('open')} [data-field="holdP99"]`, '≤ 100ms');
    await expectText(page, `${card('stopped')} [data-field="holdP50"]`, '—');

    // Writes offered only where they would do something: Resume on the paused throttle alone, no release while workers live.
    expect(await page.isVisible(`${card('stopped')} [data-action="resume"]`)).toBe(true);
    expect(await page.isVisible(`${card('open')} [data-action="resume"]`)).toBe(false);
    expect(await page.locator('[data-action="clear-limits"]:visible').count()).toBe(0);
    expect(await page.locator('[data-action="release"]').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-states-1280.png'), fullPage: true });

    await page.setViewportSize({ width: 400, height: 900 });
    await expectNothingClipped(page);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-states-400.png'), fullPage: true });
    await page.goto(`${dashboard.url}/#/bucket?throttle=in-flight`);
    await expectAttribute(page, 'section.bucket', 'data-state', 'at-limit');
    await expectText(page, '[data-field="inFlight"] td.num', '2/2 in flight');
    await expectNothingClipped(page);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-bucket-400.png'), fullPage: true });
    await page.goto(`${dashboard.url}/#/bucket?throttle=stopped`);
    await expectAttribute(page, 'section.bucket', 'data-state', 'paused');
    // Every bucket is paused by the throttle: this bucket's Resume would not lift that, so it is not offered.
    expect(await page.isVisible('[data-action="resume"]')).toBe(false);
    await page.goto(`${dashboard.url}/#/job?queue=rated&id=2`);
    await expectText(page, '[data-field="state"]', 'held');
    await expectNothingClipped(page);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job-400.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('shows the history sampled before the dashboard restarted', async () => {
    scenario = await startScenario('dash-again', { acme: 3, beta: 1 });
    dashboard = await startDashboard({ prefix: scenario.bed.prefix });
    browser = await launchBrowser();
    const chart = `section.throttle[data-throttle="${THROTTLE}"] figure.chart[data-window-ms="600000"]`;
    const before = await browser.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors = collectErrors(before);
    await before.goto(`${dashboard.url}/`);
    const points = await attributeAtLeast(before, chart, 'data-points', 4);
    const first = await before.getAttribute(chart, 'data-first');
    expect(first).toMatch(/^\d+$/);
    await before.close();

    await dashboard.close();
    dashboard = await startDashboard({ prefix: scenario.bed.prefix });
    const after = await browser.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    errors.push(...collectErrors(after));
    await after.goto(`${dashboard.url}/`);
    // The restarted dashboard's first answer draws what the first one sampled, from its first sample on.
    await attributeAtLeast(after, chart, 'data-points', points);
    expect(await after.getAttribute(chart, 'data-first')).toBe(first);
    await after.screenshot({ path: join(ARTIFACTS, 'dashboard-restarted.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
