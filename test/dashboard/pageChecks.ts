import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { done, notYet, waitUntil } from '../support/waitUntil';

// What the browser tests read off the dashboard's page. The page's types are the browser's, which the tests
// are not compiled with: code run in the page takes `any`.

export const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

export async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).first().textContent())?.trim() ?? '';
}

/** Waits for the element's text to be `expected`: the page fills in as data arrives. */
export async function expectText(page: Page, selector: string, expected: string | RegExp): Promise<void> {
  await waitUntil(`${selector} to read ${String(expected)}`, async () => {
    const got = (await page.locator(selector).first().textContent({ timeout: 1000 }))?.trim() ?? '';
    return (typeof expected === 'string' ? got === expected : expected.test(got)) ? done(got) : notYet(`it reads '${got}'`);
  }, { timeoutMs: 20_000, intervalMs: 100 });
}

/** Waits for an attribute, read as a number, to pass `atLeast`. */
export async function attributeAtLeast(page: Page, selector: string, name: string, atLeast: number): Promise<number> {
  return waitUntil(`${selector} ${name} >= ${atLeast}`, async () => {
    const value = Number(await page.locator(selector).first().getAttribute(name, { timeout: 1000 }));
    return value >= atLeast ? done(value) : notYet(`${name} is ${value}`);
  }, { timeoutMs: 20_000, intervalMs: 100 });
}

/** Errors the page reports: uncaught ones and console.error, which a test expects none of. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(`${message.text()} (${message.location().url})`); });
  return errors;
}

/** Pixels the chart's canvas has drawn (not transparent). The page's types are the browser's, which the tests are not compiled with. */
export function drawnPixels(page: Page, selector: string): Promise<number> {
  return page.$eval(selector, (canvas: any) => {
    const data: Uint8ClampedArray = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let drawn = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) drawn++;
    return drawn;
  });
}

/**
 * Elements that stick out of the viewport sideways, outside any container that scrolls them (overflow-x auto
 * or scroll): what a narrow screen would clip. Each as 'tag.class[data-field]' with its right edge.
 */
export function overflowingElements(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const doc: any = (globalThis as any).document;
    const win: any = globalThis;
    const width: number = doc.documentElement.clientWidth;
    const scrolls = (element: any): boolean => {
      for (let parent = element.parentElement; parent && parent !== doc.body; parent = parent.parentElement) {
        const overflow = win.getComputedStyle(parent).overflowX;
        if (overflow === 'auto' || overflow === 'scroll') return true;
      }
      return false;
    };
    const found: string[] = [];
    for (const element of doc.body.querySelectorAll('*')) {
      const box = element.getBoundingClientRect();
      if (box.width === 0 || (box.left >= -0.5 && box.right <= width + 0.5) || scrolls(element)) continue;
      found.push(`${element.tagName.toLowerCase()}.${[...element.classList].join('.')}[${element.getAttribute('data-field') ?? ''}] right ${Math.round(box.right)} of ${width}`);
    }
    if (doc.documentElement.scrollWidth > width) found.push(`the page scrolls sideways: ${doc.documentElement.scrollWidth} of ${width}`);
    return found;
  });
}

/** The page's tables (not the charts' legends, which uPlot lays out inline) outside a container that scrolls them sideways. */
export function tablesOutsideScrolling(page: Page): Promise<number> {
  return page.evaluate(() => [...(globalThis as any).document.querySelectorAll('table:not(.u-legend)')].filter((table: any) => !table.closest('.table-scroll')).length);
}
