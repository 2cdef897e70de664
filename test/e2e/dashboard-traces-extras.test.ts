import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, startApp, type TestContext } from '../helpers/app.js';
import { freePort } from '../helpers/server-process.js';
import { WAIT, ensureWebBuilt, launchChromium, screenshot, seriousA11yViolations, signInForDevelopment } from '../helpers/web.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * The trace detail's evaluations, feedback and OTel ids, saved filters of the traces list and the
 * sessions pages, end to end: the real app on a port, development sign-in, headless Chromium.
 */
// Sessions are listed over the last 30 days: the traces start an hour ago.
const base = Date.now() - 3_600_000;
const at = (ms: number) => new Date(base + ms);
const SESSION = 'session-extras';

let ctx: TestContext;
// The default test workers (test/helpers/workers.ts: the trace rollup), for the OTLP trace's row.
let workers: Awaited<ReturnType<typeof startTestWorkers>> | undefined;
let appUrl: string;
let browser: Browser;
let apiKey: string;
let tenantId: string;

const checkout = aTrace({ name: 'checkout', session_id: SESSION, output: '{"order":"placed"}', spans: [aSpan({ name: 'place order' }, at(0))] });
const followUp = aTrace({ name: 'follow-up question', session_id: SESSION, spans: [aSpan({ name: 'answer' }, at(60_000))] });
const other = aTrace({ name: 'search', session_id: 'session-other', spans: [aSpan({ name: 'retrieve' }, at(120_000))] });

async function signIn(context: BrowserContext, role: 'owner' | 'member' | 'viewer'): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${appUrl}/`);
  await page.waitForURL(/\/sign-in/, WAIT);
  await page.getByLabel('Tenant').selectOption(tenantId, WAIT);
  await page.getByLabel('Role').selectOption(role);
  await page.getByRole('button', { name: 'Sign in for development' }).click();
  await page.waitForURL(`${appUrl}/traces`, WAIT);
  return page;
}

beforeAll(async () => {
  ensureWebBuilt();
  const port = await freePort();
  ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx);
  await ctx.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  const acme = await ctx.app.services.tenants.create('Extras', 'pro');
  apiKey = acme.api_key;
  tenantId = acme.tenant_id;
  const ingested = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: bearer(apiKey), payload: { traces: [checkout, followUp, other] } });
  expect(ingested.statusCode, ingested.body).toBe(201);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await workers?.close();
  await ctx?.close();
});

describe('trace extras and sessions in the dashboard', () => {
  let member: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    member = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await signIn(member, 'member');
  });

  it('adds feedback from the trace detail: listed on the page and stored', async () => {
    await page.goto(`${appUrl}/traces/${checkout.id}`);
    await page.getByRole('heading', { name: 'checkout', level: 1 }).waitFor(WAIT);
    await page.getByRole('tab', { name: 'Feedback' }).click();
    await page.getByText('No feedback on this trace yet.').waitFor(WAIT);

    await page.getByLabel('Score (0 to 1)').fill('0.9');
    await page.getByLabel('Comment').fill('Exactly what the customer wanted');
    await page.getByRole('button', { name: 'Add feedback' }).click();
    await page.getByText('Feedback added (good).').waitFor(WAIT);
    const row = page.getByRole('table', { name: 'Feedback on this trace, newest first' }).locator('tbody tr');
    await expect.poll(() => row.count(), WAIT).toBe(1);
    expect(await row.first().textContent()).toContain('Exactly what the customer wanted');

    const stored = await ctx.app.inject({ method: 'GET', url: `/v1/feedback?trace_id=${checkout.id}`, headers: bearer(apiKey) });
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.json().feedback).toEqual([expect.objectContaining({ trace_id: checkout.id, score: 0.9, label: 'good', comment: 'Exactly what the customer wanted' })]);
  });

  it('evaluates the trace with a builtin check and lists the evaluation', async () => {
    await page.getByRole('tab', { name: 'Evaluations' }).click();
    await page.getByLabel(/^Scorer/).selectOption('builtin');
    await page.getByLabel(/^Check/).selectOption('json_valid');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByText(/^Evaluation (pending|running|completed|failed)\.$/).waitFor(WAIT);
    const row = page.getByRole('table', { name: 'Evaluations of this trace, newest first' }).locator('tbody tr');
    await expect.poll(() => row.count(), WAIT).toBe(1);
    expect(await row.first().textContent()).toContain('json_valid');

    const stored = await ctx.app.inject({ method: 'GET', url: `/v1/evals?trace_id=${checkout.id}`, headers: bearer(apiKey) });
    expect(stored.json().evals).toEqual([expect.objectContaining({ metric_name: 'json_valid', config: expect.objectContaining({ provider: 'builtin', preset: 'json_valid' }) })]);
    await screenshot(page, 'trace-detail-evals');

    // A malformed parameter object is caught before the API is asked.
    await page.getByLabel(/^Check/).selectOption('exact_match');
    await page.getByLabel('Parameters (JSON)').fill('[1]');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByText('The parameters must be a JSON object').waitFor(WAIT);
    await page.getByLabel('Parameters (JSON)').fill('');

    expect(await seriousA11yViolations(page)).toEqual([]);
  });

  it('opens the session of a trace and lists its traces, with links back to them', async () => {
    await page.getByRole('link', { name: SESSION, exact: true }).click();
    await page.waitForURL(`${appUrl}/sessions/${SESSION}`, WAIT);
    await page.getByRole('heading', { name: `Session ${SESSION}`, level: 1 }).waitFor(WAIT);
    const turns = page.locator('.session-turns > li');
    await expect.poll(() => turns.count(), WAIT).toBe(2);
    expect(await turns.locator('.session-turn-head a').allTextContents()).toEqual(['checkout', 'follow-up question']);
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'follow-up question' }).click();
    await page.waitForURL(`${appUrl}/traces/${followUp.id}`, WAIT);
    await page.getByRole('heading', { name: 'follow-up question', level: 1 }).waitFor(WAIT);
  });

  it('lists the sessions from the navigation', async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Sessions' }).click();
    await page.waitForURL(`${appUrl}/sessions`, WAIT);
    const rows = page.locator('table.sessions tbody tr');
    await expect.poll(() => rows.count(), WAIT).toBe(2);
    expect(await rows.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining(SESSION), expect.stringContaining('session-other')]));
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'sessions');
    await rows.getByRole('link', { name: 'session-other' }).click();
    await page.waitForURL(`${appUrl}/sessions/session-other`, WAIT);
    await expect.poll(() => page.locator('.session-turns > li').count(), WAIT).toBe(1);
  });

  it('saves the current filters under a name and loads them back in a fresh page', async () => {
    await page.goto(`${appUrl}/traces?name=checkout`);
    await expect.poll(() => page.locator('table.traces tbody tr').count(), WAIT).toBe(1);
    await page.getByRole('button', { name: 'Saved filters' }).click();
    await page.getByText('No saved filters yet.').waitFor(WAIT);
    await page.getByLabel('Name of the current filters').fill('Checkouts');
    await page.getByRole('button', { name: 'Save filters' }).click();
    await page.getByText('Saved Checkouts.').waitFor(WAIT);
    await page.getByRole('button', { name: 'Apply Checkouts' }).waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);

    const fresh = await member.newPage();
    await fresh.goto(`${appUrl}/traces`);
    await expect.poll(() => fresh.locator('table.traces tbody tr').count(), WAIT).toBe(3);
    await fresh.getByRole('button', { name: 'Saved filters' }).click();
    await fresh.getByRole('button', { name: 'Apply Checkouts' }).click();
    await fresh.waitForURL(`${appUrl}/traces?name=checkout`, WAIT);
    await fresh.getByRole('button', { name: 'Name: checkout', exact: true }).waitFor(WAIT);
    await expect.poll(() => fresh.locator('table.traces tbody tr').count(), WAIT).toBe(1);
    await fresh.close();

    const stored = await ctx.app.inject({ method: 'GET', url: '/v1/saved-filters', headers: bearer(await memberToken(page)) });
    expect(stored.json().items).toEqual([expect.objectContaining({ name: 'Checkouts', filters: { name: 'checkout' } })]);
  });

  it('deletes its own saved filter', async () => {
    await page.getByRole('button', { name: 'Delete Checkouts' }).click();
    await page.getByRole('button', { name: 'Delete it' }).click();
    await page.getByText('No saved filters yet.').waitFor(WAIT);
  });

  it('shows a viewer the write controls disabled with the reason; an owner deletes the saved filter of a member', async () => {
    // The member saves one again; the viewer may apply it but not delete it.
    await page.getByLabel('Name of the current filters').fill('Checkouts again');
    await page.getByRole('button', { name: 'Save filters' }).click();
    await page.getByText('Saved Checkouts again.').waitFor(WAIT);

    const viewer = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const seen = await signIn(viewer, 'viewer');
    await seen.getByRole('button', { name: 'Saved filters' }).click();
    await seen.getByRole('button', { name: 'Apply Checkouts again' }).waitFor(WAIT);
    expect(await seen.getByRole('button', { name: 'Save filters' }).isDisabled()).toBe(true);
    await seen.getByText('Saving filters: needs the owner or member role (you are viewer).').waitFor(WAIT);
    expect(await seen.getByRole('button', { name: 'Delete Checkouts again' }).isDisabled()).toBe(true);

    await seen.goto(`${appUrl}/traces/${checkout.id}`);
    await seen.getByRole('heading', { name: 'checkout', level: 1 }).waitFor(WAIT);
    expect(await seen.getByRole('button', { name: 'Evaluate' }).isDisabled()).toBe(true);
    await seen.getByText('Evaluating: needs the owner or member role (you are viewer).').waitFor(WAIT);
    await seen.getByRole('tab', { name: 'Feedback' }).click();
    expect(await seen.getByRole('button', { name: 'Add feedback' }).isDisabled()).toBe(true);
    await seen.getByText('Adding feedback: needs the owner or member role (you are viewer).').waitFor(WAIT);
    // The feedback the member added is there for the viewer too.
    await seen.getByText('Exactly what the customer wanted').waitFor(WAIT);
    expect(await seriousA11yViolations(seen)).toEqual([]);
    await viewer.close();

    const owner = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const boss = await signIn(owner, 'owner');
    await boss.getByRole('button', { name: 'Saved filters' }).click(WAIT);
    await boss.getByRole('button', { name: 'Delete Checkouts again' }).click(WAIT);
    await boss.getByRole('button', { name: 'Delete it' }).click();
    await boss.getByText('No saved filters yet.').waitFor(WAIT);
    await owner.close();
  });
});

describe('OTel ids on the trace detail', () => {
  const traceHex = otelTraceId();
  const rootHex = otelSpanId();
  const childHex = otelSpanId();
  let otel: { tenant_id: string; api_key: string };
  const native = aTrace({ name: 'native run', spans: [aSpan({ name: 'native step' }, at(0))] });

  beforeAll(async () => {
    // A tenant of its own: the other tests count the rows of their tenant's trace list.
    otel = await ctx.app.services.tenants.create('OTel', 'pro');
    const spans = [
      anOtlpSpan({ traceId: traceHex, spanId: rootHex, name: 'agent run', startTimeUnixNano: ns(0), endTimeUnixNano: ns(900_000_000) }),
      anOtlpSpan({ traceId: traceHex, spanId: childHex, parentSpanId: rootHex, name: 'llm call', startTimeUnixNano: ns(100_000_000), endTimeUnixNano: ns(600_000_000) }),
    ];
    const sent = await ctx.app.inject({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { ...bearer(otel.api_key), 'content-type': 'application/json' },
      payload: JSON.stringify(anOtlpRequest(spans)),
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const rolledUp = await pollUntil(
      () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${traceHex}`, headers: bearer(otel.api_key) }),
      (res) => res.statusCode === 200 && res.json().span_count === 2,
    );
    expect(rolledUp.statusCode, rolledUp.body).toBe(200);
    const ingested = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: bearer(otel.api_key), payload: native });
    expect(ingested.statusCode, ingested.body).toBe(201);
  });

  it('opens an OTLP trace by the OTel trace id in the address, shows that id with a copy button and the spans\' OTel span ids', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: appUrl });
    const page = await context.newPage();
    await signInForDevelopment(page, appUrl, otel.tenant_id, 'viewer');

    // As copied from OTel logs (any case): the dashboard's address takes it like the API does.
    await page.goto(`${appUrl}/traces/${traceHex.toUpperCase()}`);
    await page.getByRole('heading', { name: 'agent run', level: 1 }).waitFor(WAIT);
    const fact = (term: string) => page.locator('.facts > div', { has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) }).locator('dd');
    expect(await fact('OTel trace id').locator('code').textContent()).toBe(traceHex);
    await page.getByRole('button', { name: 'Copy the OTel trace id' }).click();
    await fact('OTel trace id').getByRole('status').getByText('Copied.').waitFor(WAIT);
    expect(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(traceHex);

    // The first span is shown: its OTel span id, not its zero-padded UUID; no parent (a root).
    await page.getByRole('heading', { name: 'Span: agent run' }).waitFor(WAIT);
    expect(await fact('OTel span id').locator('code').textContent()).toBe(rootHex);
    expect(await fact('OTel parent span id').count()).toBe(0);
    expect(await fact('Span id').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain('00000000-0000-0000-');

    await page.getByRole('tree', { name: 'Spans' }).getByRole('treeitem').filter({ hasText: 'llm call' }).click();
    await page.getByRole('heading', { name: 'Span: llm call' }).waitFor(WAIT);
    expect(await fact('OTel span id').locator('code').textContent()).toBe(childHex);
    expect(await fact('OTel parent span id').textContent()).toBe(rootHex);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // A natively ingested trace has no OTel ids: its UUIDs are shown as they are.
    await page.goto(`${appUrl}/traces/${native.id}`);
    await page.getByRole('heading', { name: 'native run', level: 1 }).waitFor(WAIT);
    await page.getByRole('heading', { name: 'Span: native step' }).waitFor(WAIT);
    expect(await fact('OTel trace id').count()).toBe(0);
    expect(await fact('OTel span id').count()).toBe(0);
    expect(await fact('Span id').locator('code').textContent()).toBe(native.spans[0]!.id);
    await context.close();
  });
});

/** The session token the page holds (saved filters are for signed-in people only, not API keys). */
async function memberToken(page: Page): Promise<string> {
  const token = await page.evaluate(() => {
    const storage = (globalThis as unknown as { localStorage: { length: number; key(i: number): string | null; getItem(k: string): string | null } }).localStorage;
    for (let i = 0; i < storage.length; i++) {
      const value = storage.getItem(storage.key(i) ?? '') ?? '';
      const match = /"token":"([^"]+)"/.exec(value);
      if (match) return match[1];
    }
    return null;
  });
  if (!token) throw new Error('no session token in localStorage');
  return token;
}
