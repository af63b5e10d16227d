import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (package `chromium`, which .ci/run installs when it is missing), driven by playwright-core.
 * CHROMIUM_PATH names another binary. The background-networking flags keep Chromium from dialling out: this
 * machine's network is closed and refused connections slow every start. Playwright gives each launch a new empty
 * profile of its own.
 */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
    },
  };
}
