import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aSpan, aTrace } from '../builders/traces.js';
import { startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { startOidcProvider, type LocalOidcProvider } from '../helpers/oidc-provider.js';
import { freePort } from '../helpers/server-process.js';
import { WAIT, ensureWebBuilt, launchChromium, screenshot, seriousA11yViolations } from '../helpers/web.js';

/**
 * The dashboard end to end: the real app listening on a port, a real OpenID Connect provider whose
 * ID tokens the API verifies through AUTH_JWKS_URL, and headless Chromium signing in through it.
 */
const CLIENT_ID = 'looptrace-dashboard';
const at = (ms: number) => new Date(Date.parse('2026-11-01T12:00:00.000Z') + ms);

let idp: LocalOidcProvider;
let ctx: TestContext;
let appUrl: string;
let browser: Browser;
let page: Page;
let tenant: TestTenant;

const rootId = randomUUID();
const checkout = aTrace({
  name: 'checkout',
  input: JSON.stringify({ cart: { items: [{ sku: 'A-1', qty: 2 }], coupon: null }, user: 'u-42' }),
  output: 'order placed',
  session_id: 'session-e2e',
  tags: ['env:prod'],
  spans: [
    aSpan({ id: rootId, name: 'plan order', type: 'chain', model: null, start_time: at(0).toISOString(), end_time: at(2_000).toISOString(), prompt_tokens: 0, completion_tokens: 0 }),
    aSpan({ parent_span_id: rootId, name: 'price items', start_time: at(100).toISOString(), end_time: at(900).toISOString() }, at(100)),
    aSpan(
      { parent_span_id: rootId, name: 'call payment llm', start_time: at(1_000).toISOString(), end_time: at(1_900).toISOString(), error: 'Request timed out' },
      at(1_000),
    ),
  ],
});
const searches = Array.from({ length: 52 }, (_, i) =>
  aTrace({ name: 'search', spans: [aSpan({ name: 'retrieve' }, at(10_000 + i * 1_000))] }),
);

async function ingest(traces: object[]): Promise<void> {
  const res = await fetch(`${appUrl}/v1/ingest/batch`, {
    method: 'POST',
    headers: { authorization: tenant.auth.authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ traces }),
  });
  expect(res.status, await res.text()).toBe(201);
}

beforeAll(async () => {
  ensureWebBuilt();
  const [idpPort, appPort] = [await freePort(), await freePort()];
  appUrl = `http://127.0.0.1:${appPort}`;
  // The tenant must exist before the provider knows its account: start the app, then the provider.
  const issuer = `http://127.0.0.1:${idpPort}`;
  ctx = await startApp({
    AUTH_JWKS_URL: `${issuer}/jwks`,
    AUTH_ISSUER: issuer,
    AUTH_AUDIENCE: CLIENT_ID,
    AUTH_OIDC_ISSUER: issuer,
    AUTH_OIDC_CLIENT_ID: CLIENT_ID,
  });
  await ctx.app.listen({ port: appPort, host: '127.0.0.1' });
  const acme = await ctx.app.services.tenants.create('Acme', 'pro');
  tenant = { tenantId: acme.tenant_id, projectId: acme.project_id, apiKey: acme.api_key, auth: { authorization: `Bearer ${acme.api_key}` } };
  idp = await startOidcProvider({
    port: idpPort,
    clientId: CLIENT_ID,
    redirectUri: `${appUrl}/auth/callback`,
    accounts: { ada: { tenant_id: tenant.tenantId, role: 'member', email: 'ada@example.test' } },
  });
  await ingest([checkout, ...searches]);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
});

afterAll(async () => {
  await browser?.close();
  await ctx?.close();
  await idp?.close();
});

describe('the web dashboard with single sign-on', () => {
  it('signs in through the OpenID Connect provider with the authorization code and PKCE', async () => {
    await page.goto(`${appUrl}/traces`);
    await page.waitForURL(/\/sign-in\?next=%2Ftraces$/, WAIT);
    const button = page.getByRole('button', { name: 'Sign in with single sign-on' });
    await button.waitFor(WAIT);
    // Development sign-in is off where sessions come from an identity provider.
    expect(await page.getByRole('heading', { name: 'Development sign-in' }).count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);

    const authorize = page.waitForRequest((r) => r.url().startsWith(`${idp.issuer}/auth?`), WAIT);
    await button.click();
    const query = new URL((await authorize).url()).searchParams;
    expect(query.get('response_type')).toBe('code');
    expect(query.get('code_challenge_method')).toBe('S256');
    expect(query.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // oidc-provider's own login and consent pages.
    await page.locator('input[name="login"]').fill('ada', WAIT);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click(WAIT); // consent
    await page.waitForURL(`${appUrl}/traces`, WAIT);
    await page.getByText('ada@example.test · member').waitFor(WAIT);
  });

  it('lists the traces ingested through the API, 50 at a time with "Load more"', async () => {
    const rows = page.locator('table.traces tbody tr');
    await rows.first().waitFor(WAIT);
    expect(await rows.count()).toBe(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count(), WAIT).toBe(53);
    // The rows that came in take the focus, for keyboard users.
    const focusedRow = () => page.evaluate(() => (globalThis as unknown as { document: { activeElement: { rowIndex?: number } } }).document.activeElement.rowIndex);
    await expect.poll(focusedRow, WAIT).toBe(51); // the header row is row 0
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
  });

  const addFilter = async (kind: string) => {
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByRole('menuitem', { name: kind, exact: true }).click();
    return page.getByRole('dialog', { name: `Filter: ${kind}` });
  };

  it('narrows the list with a filter, kept in the URL', async () => {
    const failure = await addFilter('Failure type');
    await failure.getByLabel('Failure type').selectOption('timeout');
    await failure.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/failure_type=timeout/, WAIT);
    const rows = page.locator('table.traces tbody tr');
    await expect.poll(() => rows.count(), WAIT).toBe(1);
    expect(await rows.first().textContent()).toContain('checkout');
    expect(await rows.first().textContent()).toContain('Timeout');

    const name = await addFilter('Name');
    await name.getByLabel('Trace name (exact)').fill('search');
    await name.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No traces match these filters.').waitFor(WAIT);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => rows.count(), WAIT).toBe(50);

    // Full-text search: every word, any case, in the trace's or its spans' texts.
    const search = page.getByRole('searchbox', { name: 'Search traces' });
    await search.fill('PLACED order');
    await search.press('Enter');
    await page.waitForURL(/q=PLACED/, WAIT);
    await expect.poll(() => rows.count(), WAIT).toBe(1);
    expect(await rows.first().textContent()).toContain('checkout');
    await search.fill('');
    await search.press('Enter');
    await expect.poll(() => rows.count(), WAIT).toBe(50);
  });

  it('exports the current filter as CSV and as Parquet', async () => {
    const name = await addFilter('Name');
    await name.getByLabel('Trace name (exact)').fill('checkout');
    await name.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.locator('table.traces tbody tr').count(), WAIT).toBe(1);
    const download = page.waitForEvent('download', WAIT);
    await page.getByRole('button', { name: 'CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('traces.csv');
    const csv = await new Response(await file.createReadStream()).text();
    const lines = csv.trim().split('\n');
    expect(lines[0]).toMatch(/^trace_id,span_id,/);
    expect(lines.slice(1).map((line) => line.split(',')[0])).toEqual(Array(3).fill(`"${checkout.id}"`));

    const parquetDownload = page.waitForEvent('download', WAIT);
    await page.getByRole('button', { name: 'Parquet' }).click();
    const parquet = await parquetDownload;
    expect(parquet.suggestedFilename()).toBe('traces.parquet');
    const bytes = Buffer.from(await new Response(await parquet.createReadStream()).arrayBuffer());
    expect([bytes.subarray(0, 4).toString(), bytes.subarray(-4).toString()]).toEqual(['PAR1', 'PAR1']);
  });

  it('opens a trace from the keyboard and shows its span tree beside its timeline', async () => {
    await page.locator('table.traces tbody tr').first().focus();
    await page.keyboard.press('Enter'); // the trace beside the list…
    await page.getByRole('complementary', { name: 'checkout' }).waitFor(WAIT);
    await page.keyboard.press('Enter'); // …then its own page
    await page.waitForURL(`${appUrl}/traces/${checkout.id}`, WAIT);
    await page.getByRole('heading', { name: 'checkout', level: 1 }).waitFor(WAIT);

    const tree = page.getByRole('tree', { name: 'Spans' });
    const spans = tree.getByRole('treeitem');
    expect(await spans.allTextContents()).toEqual([
      expect.stringContaining('plan order'),
      expect.stringContaining('price items'),
      expect.stringContaining('call payment llm'),
    ]);
    // Children are nested under their parent; bars sit on the trace's time line.
    const levels = await spans.evaluateAll((els) => els.map((el) => (el as unknown as { getAttribute(name: string): string | null }).getAttribute('aria-level')));
    expect(levels.slice(0, 2)).toEqual(['1', '2']);
    const bar = (i: number) => spans.nth(i).locator('.span-bar').evaluate((el) => (el as unknown as { style: { left: string; width: string } }).style.left);
    expect([await bar(0), await bar(1), await bar(2)]).toEqual(['0%', '5%', '50%']);

    // Input pretty-printed, deeper levels folded; the failure type of the trace and of its span.
    await page.getByRole('region', { name: 'Trace input' }).getByText('"u-42"').waitFor(WAIT);
    expect(await page.getByRole('region', { name: 'Trace input' }).locator('details').first().getAttribute('open')).not.toBeNull();
    await page.getByText('Failure type:').first().waitFor(WAIT);

    // ↓ moves along the spans, Enter shows one.
    await tree.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Span: call payment llm' }).waitFor(WAIT);
    expect(await page.locator('.span-detail').textContent()).toContain('Request timed out');
    expect(await page.locator('.span-detail').textContent()).toContain('Timeout');

    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'trace-detail');
  });

  it('signs out at the identity provider too: the next sign-in asks for the account again', async () => {
    const endSession = page.waitForRequest((r) => r.url().startsWith(`${idp.issuer}/session/end?`), WAIT);
    await page.getByRole('button', { name: 'Sign out' }).click();
    const query = new URL((await endSession).url()).searchParams;
    expect(query.get('post_logout_redirect_uri')).toBe(`${appUrl}/sign-in`);
    expect(query.get('id_token_hint')).toMatch(/^ey/);

    await page.getByRole('button', { name: 'Yes, sign me out' }).click(WAIT); // oidc-provider's own confirmation
    await page.waitForURL((url) => url.pathname === '/sign-in', WAIT);
    expect(await page.evaluate(() => (globalThis as unknown as { localStorage: { getItem(k: string): string | null } }).localStorage.getItem('looptrace.session'))).toBeNull();
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).click(WAIT);
    await page.locator('input[name="login"]').waitFor(WAIT);
  });
});
