import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SQL_EXAMPLES } from '../../web/src/sql/examples.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, type TestContext } from '../helpers/app.js';
import { startDashboard, type RunningDashboard } from '../helpers/dashboard.js';
import { WAIT, checkPage, openFromNav, signInForDevelopment, watchProblems } from '../helpers/web.js';
import { pollUntil } from '../helpers/workers.js';

/**
 * The SQL page end to end: the real app on a port, development sign-in, headless Chromium. A query
 * typed and run from the keyboard, an example, a refusal with its reason, the CSV and Parquet
 * downloads, the last query kept, and the page as a Starter tenant sees it.
 */
// The examples look at the last days: the traces start an hour ago.
const base = Date.now() - 3_600_000;
const at = (ms: number) => new Date(base + ms);

const TRACES = [
  aTrace({ name: 'checkout', session_id: 'session-a', spans: [aSpan({ name: 'plan', model: 'gpt-4o', prompt_tokens: 100, completion_tokens: 20 }, at(0))] }),
  aTrace({ name: 'follow-up', session_id: 'session-a', spans: [aSpan({ name: 'answer', model: 'gpt-4o', prompt_tokens: 40, completion_tokens: 10 }, at(60_000))] }),
  aTrace({
    name: 'search',
    session_id: 'session-b',
    spans: [aSpan({ name: 'retrieve', model: 'claude-sonnet', prompt_tokens: 7, completion_tokens: 1, error: 'Request timed out' }, at(120_000))],
  }),
];
const QUERY = 'SELECT model, count() AS calls, sum(prompt_tokens) AS prompt_tokens\nFROM spans\nGROUP BY model\nORDER BY model';

let dashboard: RunningDashboard | undefined;
let ctx: TestContext;
let appUrl: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let pro: { tenant_id: string; api_key: string };
let starter: { tenant_id: string; api_key: string };
/** Console errors, uncaught exceptions and 4xx/5xx answers of the page, since the last test began. */
let problems: string[];

const sql = (apiKey: string, query: string) => ctx.app.inject({ method: 'POST', url: '/v1/sql', headers: bearer(apiKey), payload: { query } });
const editor = () => page.getByLabel('Query', { exact: true });
const resultTable = () => page.getByRole('table', { name: 'Result of the query' });
const cells = (row: number) => resultTable().locator('tbody tr').nth(row).locator('td').allTextContents();

beforeAll(async () => {
  dashboard = await startDashboard();
  ({ ctx, url: appUrl, browser } = dashboard);
  pro = await ctx.app.services.tenants.create('Analysts', 'pro');
  starter = await ctx.app.services.tenants.create('Small shop', 'starter');
  const sent = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: bearer(pro.api_key), payload: { traces: TRACES } });
  expect(sent.statusCode, sent.body).toBe(201);
  const stored = await pollUntil(
    () => sql(pro.api_key, 'SELECT (SELECT count() FROM traces) + (SELECT count() FROM spans) AS n'),
    (res) => res.statusCode === 200 && res.json().rows[0]?.[0] === 6,
    120,
    250,
  );
  expect(stored.statusCode, stored.body).toBe(200);
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  problems = watchProblems(page);
});

afterAll(async () => dashboard?.close());

beforeEach(() => {
  problems.length = 0;
});

describe('the SQL page on the Pro plan', () => {
  it('runs the query typed in the editor with Ctrl+Enter: columns with their ClickHouse types, rows, and what answering cost', async () => {
    await signInForDevelopment(page, appUrl, pro.tenant_id, 'viewer');
    await openFromNav(page, 'SQL', 'SQL');
    await editor().fill(QUERY);
    await editor().press('Control+Enter');
    await resultTable().waitFor(WAIT);

    const headers = await resultTable().locator('thead th').allTextContents();
    expect(headers).toEqual([expect.stringMatching(/^model.*String/), 'callsUInt64', 'prompt_tokensUInt64']);
    expect(await resultTable().locator('tbody tr').count()).toBe(2);
    expect(await cells(0)).toEqual(['claude-sonnet', '1', '7']);
    expect(await cells(1)).toEqual(['gpt-4o', '2', '140']);
    expect(await page.getByRole('status').textContent()).toMatch(/^2 rows · [\d,]+ rows read · [\d.]+ ms$/);
    expect(problems).toEqual([]);
  });

  it('downloads the same query as CSV and as Parquet', async () => {
    const download = page.waitForEvent('download', WAIT);
    await page.getByRole('group', { name: 'Download the query' }).getByRole('button', { name: 'CSV' }).click();
    const csv = await download;
    expect(csv.suggestedFilename()).toBe('query.csv');
    expect(await new Response(await csv.createReadStream()).text()).toBe('"model","calls","prompt_tokens"\n"claude-sonnet",1,7\n"gpt-4o",2,140\n');

    const parquetDownload = page.waitForEvent('download', WAIT);
    await page.getByRole('button', { name: 'Parquet' }).click();
    const parquet = await parquetDownload;
    expect(parquet.suggestedFilename()).toBe('query.parquet');
    const bytes = Buffer.from(await new Response(await parquet.createReadStream()).arrayBuffer());
    expect([bytes.subarray(0, 4).toString(), bytes.subarray(-4).toString()]).toEqual(['PAR1', 'PAR1']);
    expect(problems).toEqual([]);
  });

  it("shows a refused query with the server's code, message and reason, and no result", async () => {
    await editor().fill('SELECT * FROM system.tables');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('The query was refused.').waitFor(WAIT);
    const text = await alert.textContent();
    expect(text).toContain('Reason: only the tables traces, spans, metrics_1m can be read, not system.tables (no database may be named)');
    expect(text).toContain('400 · sql.refused');
    expect(await resultTable().count()).toBe(0);
    await checkPage(page);
    // The refusal is the only failed request, and the browser's own note of it the only console error.
    expect([...problems].sort()).toEqual([`400 POST ${appUrl}/v1/sql`, `console: Failed to load resource: the server responded with a status of 400 (Bad Request) ${appUrl}/v1/sql`]);
  });

  it('inserts an example, runs it, and keeps the last query for the next visit', async () => {
    const tokens = SQL_EXAMPLES.find((example) => example.label === 'Tokens per session')!;
    await page.getByRole('group', { name: 'Examples' }).getByRole('button', { name: tokens.label }).click();
    expect(await editor().inputValue()).toBe(tokens.query);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await resultTable().waitFor(WAIT);
    expect(await resultTable().locator('thead th').allTextContents()).toEqual(['session_idString', 'tracesUInt64', expect.stringMatching(/^tokens/), expect.stringMatching(/^cost/)]);
    expect(await resultTable().locator('tbody tr td:first-child').allTextContents()).toEqual(['session-a', 'session-b']);
    expect(await page.getByRole('alert').count()).toBe(0);
    await checkPage(page, 'sql');

    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'SQL' }).waitFor(WAIT);
    expect(await editor().inputValue()).toBe(tokens.query);
    expect(problems).toEqual([]);
  });

  it('offers only examples the API runs', async () => {
    for (const example of SQL_EXAMPLES) {
      const res = await sql(pro.api_key, example.query);
      expect(res.statusCode, `${example.label}: ${res.body}`).toBe(200);
    }
  });
});

describe('the SQL page below the Pro plan', () => {
  it('lists SQL disabled with the reason, and the page says why it cannot run', async () => {
    await signInForDevelopment(page, appUrl, starter.tenant_id, 'owner');
    const item = page.locator('.nav-disabled', { hasText: 'SQL' });
    expect(await item.getAttribute('aria-disabled')).toBe('true');
    expect(await item.textContent()).toContain('needs the Pro plan or above (this tenant is on Starter)');

    await page.goto(`${appUrl}/sql`);
    await page.getByRole('heading', { level: 1, name: 'SQL' }).waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Run', exact: true }).isDisabled()).toBe(true);
    await page.getByText('Running SQL: needs the Pro plan or above (this tenant is on Starter).').waitFor(WAIT);
    await checkPage(page);
    expect(problems).toEqual([]);
  });
});
