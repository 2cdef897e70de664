import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, type TestContext } from '../helpers/app.js';
import { startDashboard, type RunningDashboard } from '../helpers/dashboard.js';
import { WAIT, checkPage, signInForDevelopment, watchProblems } from '../helpers/web.js';
import { pollUntil } from '../helpers/workers.js';

/**
 * The trace list end to end (issue 22): search box, filter chips, time presets, columns, saved
 * filters menu, the peek panel, live mode and the keyboard, with the whole state in the URL. The
 * real app on a port, development sign-in, headless Chromium.
 */
const ago = (ms: number) => new Date(Date.now() - ms);
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** A one-span trace started `before` ms ago, lasting `latency` ms. */
const traceAgo = (before: number, latency: number, fields: Record<string, unknown>) => {
  const start = ago(before);
  return aTrace({ ...fields, spans: [aSpan({ name: `${String(fields.name)} call`, model: fields.model, end_time: new Date(start.getTime() + latency).toISOString() }, start)] });
};
// Newest first, as the list shows them.
const refund = traceAgo(5 * MIN, 800, { name: 'refund request', input: 'The customer wants a refund for order 1234', model: 'gpt-4o', tag_map: { env: 'prod' } });
const weather = traceAgo(2 * HOUR, 200, { name: 'weather lookup', input: 'Forecast for Lyon tomorrow', model: 'gpt-4o-mini' });
const summary = traceAgo(3 * DAY, 300, { name: 'summarise ticket', input: 'Summarise ticket 77', model: 'claude-sonnet' });
const archived = traceAgo(30 * DAY, 400, { name: 'old import', input: 'Import the archive', model: 'gpt-4o-mini' });
const ALL = [refund, weather, summary, archived].map((t) => t.name as string);

let ctx: TestContext;
let dashboard: RunningDashboard | undefined;
let appUrl: string;
let browser: Browser;
let apiKey: string;
let tenantId: string;

const ingest = async (traces: unknown[]) => {
  const sent = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: bearer(apiKey), payload: { traces } });
  expect(sent.statusCode, sent.body).toBe(201);
};

beforeAll(async () => {
  dashboard = await startDashboard({ workers: true });
  ({ ctx, url: appUrl, browser } = dashboard);
  const tenant = await ctx.app.services.tenants.create('Trace list', 'pro');
  apiKey = tenant.api_key;
  tenantId = tenant.tenant_id;
  await ingest([refund, weather, summary, archived]);
  await pollUntil(
    () => ctx.app.inject({ method: 'GET', url: '/v1/traces', headers: bearer(apiKey) }),
    (r) => r.json().traces?.length === 4,
    100,
  );
});

afterAll(async () => dashboard?.close());

describe('the trace list in the dashboard', () => {
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  const rows = () => page.locator('table.traces tbody tr');
  const names = () => page.locator('table.traces tbody tr td:nth-child(2)').allTextContents();
  const expectNames = (expected: string[]) => expect.poll(names, WAIT).toEqual(expected);
  const search = () => page.getByRole('searchbox', { name: 'Search traces' });
  const params = () => new URL(page.url()).searchParams;
  const addFilter = async (kind: string) => {
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByRole('menuitem', { name: kind, exact: true }).click();
    return page.getByRole('dialog', { name: `Filter: ${kind}` });
  };

  beforeAll(async () => {
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    problems = watchProblems(page);
    await signInForDevelopment(page, appUrl, tenantId, 'member');
  });
  afterAll(() => context?.close());
  beforeEach(() => {
    problems.length = 0;
  });
  // No console error, no failed call, whatever the test did.
  afterEach(() => expect(problems).toEqual([]));

  it('opens on the table, newest first, with the search box above it; a word finds its trace', async () => {
    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);
    await page.getByText('Newest first: the only order GET /v1/traces offers.').waitFor(WAIT);
    await search().fill('REFUND');
    await search().press('Enter');
    await page.waitForURL(/q=REFUND/, WAIT);
    await expectNames(['refund request']);
    await search().fill('Lyon');
    await search().press('Enter');
    await expectNames(['weather lookup']);
    await checkPage(page);
    await search().fill('');
    await search().press('Enter');
    await expectNames(ALL);
    expect(params().has('q')).toBe(false);
  });

  it('adds, edits and removes filter chips, each change in the results and the URL; back and forward restore them', async () => {
    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);

    const model = await addFilter('Model');
    await checkPage(page); // the chip's editor open
    await model.getByLabel('Model').fill('gpt-4o-mini');
    await model.getByRole('button', { name: 'Apply' }).click();
    await expectNames(['weather lookup', 'old import']);
    expect(params().get('model')).toBe('gpt-4o-mini');
    // The focus lands on the new chip, for keyboard users.
    await expect.poll(() => page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent), WAIT).toBe('Model: gpt-4o-mini');

    // Editing the chip.
    await page.getByRole('button', { name: 'Model: gpt-4o-mini', exact: true }).click();
    await page.getByRole('dialog', { name: 'Filter: Model' }).getByLabel('Model').fill('gpt-4o');
    await page.getByRole('dialog', { name: 'Filter: Model' }).getByRole('button', { name: 'Apply' }).click();
    await expectNames(['refund request']);
    expect(params().get('model')).toBe('gpt-4o');

    // A second chip, a range: at least 500 ms (only the refund lasts 800 ms).
    await page.getByRole('button', { name: 'Remove Model: gpt-4o' }).click();
    await expectNames(ALL);
    const latency = await addFilter('Latency');
    await latency.getByLabel('At least (ms)').fill('500');
    await latency.getByRole('button', { name: 'Apply' }).click();
    await expectNames(['refund request']);
    expect(params().get('latency_min')).toBe('500');
    const tag = await addFilter('Tag');
    await tag.getByLabel('Tag key').fill('env');
    await tag.getByRole('button', { name: 'Apply' }).click();
    await tag.getByRole('alert').getByText('Give both.').waitFor(WAIT); // the API needs both
    await tag.getByLabel('Tag value').fill('prod');
    await tag.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('button', { name: 'Tag: env = prod', exact: true }).waitFor(WAIT);
    expect(Object.fromEntries(params())).toEqual({ latency_min: '500', tag_key: 'env', tag_value: 'prod' });
    await page.getByRole('button', { name: 'Remove Latency: ≥ 500 ms' }).click();
    await page.getByRole('button', { name: 'Remove Tag: env = prod' }).click();
    await expectNames(ALL);
    expect(params().toString()).toBe('');

    // The back button walks the states back (tag alone, then latency and tag), the forward button forth.
    await page.goBack();
    await page.getByRole('button', { name: 'Tag: env = prod', exact: true }).waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Latency: ≥ 500 ms', exact: true }).count()).toBe(0);
    await expectNames(['refund request']);
    await page.goBack();
    await page.getByRole('button', { name: 'Latency: ≥ 500 ms', exact: true }).waitFor(WAIT);
    expect(Object.fromEntries(params())).toEqual({ latency_min: '500', tag_key: 'env', tag_value: 'prod' });
    await page.goForward();
    await page.waitForURL((url) => !url.searchParams.has('latency_min'), WAIT);
    await expect.poll(() => page.getByRole('button', { name: 'Latency: ≥ 500 ms', exact: true }).count(), WAIT).toBe(0);
  });

  it('opens a shared URL in the same state: search, chips, time range and the trace in the side panel', async () => {
    const other = await context.newPage();
    const seen = watchProblems(other);
    await other.goto(`${appUrl}/traces?q=order&model=gpt-4o&range=24h&peek=${refund.id}`);
    const panel = other.getByRole('complementary', { name: 'refund request' });
    await panel.getByText('The customer wants a refund for order 1234').waitFor(WAIT);
    expect(await other.getByRole('searchbox', { name: 'Search traces' }).inputValue()).toBe('order');
    await other.getByRole('button', { name: 'Model: gpt-4o', exact: true }).waitFor(WAIT);
    expect(await other.getByRole('combobox', { name: 'Time range' }).inputValue()).toBe('24h');
    await expect.poll(() => other.locator('table.traces tbody tr').count(), WAIT).toBe(1);
    await other.close();
    expect(seen).toEqual([]);
  });

  it('narrows the list to a preset time range or a custom from/to', async () => {
    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);
    const range = page.getByRole('combobox', { name: 'Time range' });
    await range.selectOption('15m');
    await expectNames(['refund request']);
    expect(params().get('range')).toBe('15m');
    await range.selectOption('24h');
    await expectNames(['refund request', 'weather lookup']);
    await range.selectOption('7d');
    await expectNames(['refund request', 'weather lookup', 'summarise ticket']);
    await range.selectOption('');
    await expectNames(ALL);

    // Custom: around the summary, three days ago, in this browser's zone (UTC here).
    await range.selectOption('custom');
    const custom = page.getByRole('form', { name: 'Custom time range' });
    const local = (ms: number) => ago(ms).toISOString().slice(0, 19);
    await custom.getByLabel('From').fill(local(3 * DAY - HOUR));
    await custom.getByLabel('To').fill(local(3 * DAY + HOUR));
    await custom.getByRole('button', { name: 'Apply range' }).click();
    await custom.getByRole('alert').getByText('"To" is before "From".').waitFor(WAIT); // not the API's 400
    await custom.getByLabel('From').fill(local(3 * DAY + HOUR));
    await custom.getByLabel('To').fill(local(3 * DAY - HOUR));
    await custom.getByRole('button', { name: 'Apply range' }).click();
    await expectNames(['summarise ticket']);
    expect(params().has('from') && params().has('to')).toBe(true);
    await checkPage(page);
    await range.selectOption('');
    await expectNames(ALL);
  });

  it('shows the columns chosen, remembered after a reload', async () => {
    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);
    const headers = () => page.locator('table.traces thead th').allTextContents();
    expect(await headers()).toContain('Model');
    await page.getByRole('button', { name: 'Columns' }).click();
    const menu = page.getByRole('dialog', { name: 'Columns shown' });
    await menu.getByLabel('Session').check();
    await menu.getByLabel('Model').uncheck();
    await checkPage(page);
    await page.keyboard.press('Escape');
    await expect.poll(headers, WAIT).toContain('Session');
    expect(await headers()).not.toContain('Model');
    await page.reload();
    await expectNames(ALL);
    expect(await headers()).toContain('Session');
    expect(await headers()).not.toContain('Model');
    // Back to the default for the other tests.
    await page.getByRole('button', { name: 'Columns' }).click();
    await page.getByRole('dialog', { name: 'Columns shown' }).getByLabel('Session').uncheck();
    await page.getByRole('dialog', { name: 'Columns shown' }).getByLabel('Model').check();
    await page.keyboard.press('Escape');
  });

  it('saves the current filters from the saved filters menu, applies them to another list, replaces and deletes them', async () => {
    await page.goto(`${appUrl}/traces?model=gpt-4o-mini&range=7d`);
    await expectNames(['weather lookup']);
    await page.getByRole('button', { name: 'Saved filters' }).click();
    const menu = page.getByRole('dialog', { name: 'Saved filters' });
    await menu.getByText('No saved filters yet.').waitFor(WAIT);
    await menu.getByLabel('Name of the current filters').fill('Mini this week');
    await menu.getByRole('button', { name: 'Save filters' }).click();
    await menu.getByText('Saved Mini this week.').waitFor(WAIT);
    await menu.getByRole('button', { name: 'Apply Mini this week' }).waitFor(WAIT);
    await checkPage(page);
    await page.keyboard.press('Escape');

    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);
    await page.getByRole('button', { name: 'Saved filters' }).click();
    await menu.getByRole('button', { name: 'Apply Mini this week' }).click();
    await expectNames(['weather lookup']);
    expect(Object.fromEntries(params())).toEqual({ model: 'gpt-4o-mini', range: '7d' });
    expect(await menu.count()).toBe(0); // applying closes the menu

    // Replaced with the filters of the list as it is now.
    await page.goto(`${appUrl}/traces?model=claude-sonnet`);
    await expectNames(['summarise ticket']);
    await page.getByRole('button', { name: 'Saved filters' }).click();
    await menu.getByText('model=gpt-4o-mini, range=7d').waitFor(WAIT);
    await menu.getByRole('button', { name: 'Replace Mini this week with the current filters' }).click();
    await menu.getByText('model=claude-sonnet').waitFor(WAIT);
    await menu.getByRole('button', { name: 'Delete Mini this week' }).click();
    await menu.getByRole('button', { name: 'Delete it' }).click();
    await menu.getByText('No saved filters yet.').waitFor(WAIT);
  });

  it('peeks at a trace in a side panel without leaving the list; Esc closes it', async () => {
    // Shown with a chip and a preset, for the screenshot.
    await page.goto(`${appUrl}/traces?latency_max=500&range=7d`);
    await expectNames(['weather lookup', 'summarise ticket']);
    await rows().nth(0).locator('td').first().click();
    const panel = page.getByRole('complementary', { name: 'weather lookup' });
    await panel.getByText('Forecast for Lyon tomorrow').waitFor(WAIT);
    expect(params().get('peek')).toBe(weather.id);
    expect(await panel.getByRole('link', { name: 'Open full view' }).getAttribute('href')).toBe(`/traces/${weather.id}`);
    await checkPage(page, 'traces');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('complementary').count(), WAIT).toBe(0);
    expect(params().has('peek')).toBe(false);
  });

  it('in live mode, prepends a trace ingested after the list loaded, once', async () => {
    await page.goto(`${appUrl}/traces`);
    await expectNames(ALL);
    await page.getByRole('button', { name: 'Live' }).click();
    await page.waitForURL(/live=1/, WAIT);
    await expect.poll(() => page.getByRole('button', { name: 'Live' }).getAttribute('aria-pressed'), WAIT).toBe('true');
    await page.keyboard.press('j'); // the selection on the second row, the weather lookup
    const late = traceAgo(0, 100, { name: 'late arrival', input: 'just now' });
    await ingest([late]);
    await expectNames(['late arrival', ...ALL]);
    await page.getByText('1 new trace since this list loaded.').waitFor(WAIT);
    // The selection stays on its trace as the rows move down.
    expect(await page.locator('table.traces tbody tr[tabindex="0"]').textContent()).toContain('weather lookup');
    await checkPage(page);
    // Later polls find it listed already.
    await page.waitForResponse((r) => r.url().includes('/v1/traces?'), WAIT);
    await page.waitForResponse((r) => r.url().includes('/v1/traces?'), WAIT);
    expect(await names()).toEqual(['late arrival', ...ALL]);
    await page.getByRole('button', { name: 'Live' }).click();
    await page.waitForURL((url) => !url.searchParams.has('live'), WAIT);
  });

  it('works from the keyboard: / searches, j and k move, Enter peeks then opens, Esc closes', async () => {
    await page.goto(`${appUrl}/traces`);
    const all = ['late arrival', ...ALL];
    await expectNames(all);
    const focused = () =>
      page.evaluate(() => {
        const active = (globalThis as unknown as { document: { activeElement: { rowIndex?: number; id: string } } }).document.activeElement;
        return { rowIndex: active.rowIndex, id: active.id };
      });

    await page.keyboard.press('/');
    expect((await focused()).id).toBe('trace-search');
    await page.keyboard.type('Lyon');
    await page.keyboard.press('Enter');
    await expectNames(['weather lookup']);
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Enter');
    await expectNames(all);

    await page.keyboard.press('Tab'); // out of the search box, to its button
    await page.keyboard.press('j'); // the first row has the selection: j goes to the second
    await expect.poll(async () => (await focused()).rowIndex, WAIT).toBe(2); // the header row is row 0
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    await expect.poll(async () => (await focused()).rowIndex, WAIT).toBe(2);
    await page.keyboard.press('Enter');
    await page.getByRole('complementary', { name: ALL[0] }).waitFor(WAIT);
    // With the panel open, j and k take it along.
    await page.keyboard.press('j');
    await page.getByRole('complementary', { name: ALL[1] }).waitFor(WAIT);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('complementary').count(), WAIT).toBe(0);
    await expect.poll(async () => (await focused()).rowIndex, WAIT).toBe(3);

    await page.keyboard.press('Enter');
    await page.getByRole('complementary', { name: ALL[1] }).waitFor(WAIT);
    await page.keyboard.press('Enter'); // again: the trace's own page
    await page.waitForURL(`${appUrl}/traces/${weather.id}`, WAIT);
    await page.getByRole('heading', { name: 'weather lookup', level: 1 }).waitFor(WAIT);
  });
});
