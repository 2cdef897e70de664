import type { Browser } from 'playwright-core';
import { startApp, type TestContext } from './app.js';
import { freePort } from './server-process.js';
import { ensureWebBuilt, launchChromium } from './web.js';
import { startTestWorkers, TEST_REDIS_PREFIX } from './workers.js';

/** What a dashboard browser test runs against: the app on a loopback port (with the background workers when asked) and Chromium. */
export interface RunningDashboard {
  ctx: TestContext;
  url: string;
  browser: Browser;
  close(): Promise<void>;
}

export async function startDashboard(options: { workers?: boolean } = {}): Promise<RunningDashboard> {
  ensureWebBuilt();
  const port = await freePort();
  const ctx = await startApp(options.workers ? { REDIS_PREFIX: TEST_REDIS_PREFIX } : {});
  const workers = options.workers ? await startTestWorkers(ctx) : undefined;
  await ctx.app.listen({ port, host: '127.0.0.1' });
  const browser = await launchChromium();
  return {
    ctx,
    url: `http://127.0.0.1:${port}`,
    browser,
    async close() {
      await browser.close();
      await workers?.close();
      await ctx.close();
    },
  };
}
