import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, type TestContext } from '../helpers/app.js';
import { startDashboard, type RunningDashboard } from '../helpers/dashboard.js';
import { WAIT, screenshot, seriousA11yViolations, signInForDevelopment, watchProblems } from '../helpers/web.js';
import { pollUntil } from '../helpers/workers.js';

/**
 * The trace view end to end (the real app on a port, development sign-in, headless Chromium): the
 * span tree beside its timeline, inputs and outputs by kind, the OTel ids of an OTLP trace, a trace
 * of 10,000 spans, a session as a conversation, and no console error on the way.
 */
const base = Date.now() - 3_600_000;
const at = (ms: number) => new Date(base + ms);
const SESSION = 'support-chat';

const chatInput = JSON.stringify({
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'You are a support agent for Acme.' },
    { role: 'user', content: 'Where is my order 42?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":42}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"status":"shipped"}' },
  ],
});
// An Anthropic message: text and tool use blocks.
const chatOutput = JSON.stringify({
  role: 'assistant',
  content: [
    { type: 'text', text: 'Your order has shipped.' },
    { type: 'tool_use', id: 'toolu_1', name: 'send_email', input: { to: 'ada@example.com' } },
  ],
});
const jsonInput = JSON.stringify({ query: 'order 42', filters: { region: 'eu', window: { days: 30 } } });
const markdownOutput = ['# Shipping report', '', 'The order is **shipped** and `tracked`.', '', '- first item', '- second item', '', '<img src=x onerror=alert(1)> and [a bad link](javascript:alert(1))'].join('\n');

const root = aSpan({ name: 'handle ticket', type: 'agent', input: 'ticket 42', output: 'done', prompt_tokens: 0, completion_tokens: 0, end_time: at(1_000).toISOString() }, at(0));
const llm = aSpan({ name: 'answer with tools', parent_span_id: root.id, input: chatInput, output: chatOutput, cost: 0.0123, end_time: at(600).toISOString() }, at(100));
const lookup = aSpan({ name: 'lookup order', type: 'tool', parent_span_id: root.id, input: jsonInput, output: markdownOutput, prompt_tokens: 0, completion_tokens: 0, end_time: at(1_000).toISOString() }, at(700));
const retry = aSpan({ name: 'fetch carrier status', type: 'retrieval', parent_span_id: lookup.id, error: 'upstream timed out', prompt_tokens: 0, completion_tokens: 0, end_time: at(1_000).toISOString() }, at(750));
const ticket = aTrace({ name: 'support ticket', session_id: SESSION, input: JSON.stringify([{ role: 'user', content: 'Where is my order 42?' }]), output: chatOutput, spans: [root, llm, lookup, retry] });
const followUp = aTrace({
  name: 'follow-up',
  session_id: SESSION,
  input: JSON.stringify([{ role: 'user', content: 'And when will it arrive?' }]),
  output: JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'On **Friday**.' } }] }),
  spans: [aSpan({ name: 'answer' }, at(60_000))],
});

const BIG = 10_000;
/** 100 steps of 99 children each (a wide, two-level tree, as an agent's loop records). */
function aBigTrace() {
  const top = aSpan({ name: 'big run', type: 'agent', input: '', output: '' }, at(0));
  const spans = [top];
  for (let step = 0; spans.length < BIG; step += 1) {
    const parent = aSpan({ name: `step ${step}`, type: 'chain', parent_span_id: top.id, input: '', output: '' }, at(step * 100));
    spans.push(parent);
    // Distinct start times: siblings are ordered by them.
    for (let i = 0; i < 98 && spans.length < BIG; i += 1) spans.push(aSpan({ name: `call ${step}.${i}`, parent_span_id: parent.id, input: 'q', output: 'a' }, at(step * 100 + i + 1)));
  }
  return aTrace({ name: 'big trace', spans });
}
const big = aBigTrace();

let ctx: TestContext;
let dashboard: RunningDashboard | undefined;
let appUrl: string;
let browser: Browser;
let tenantId: string;
let context: BrowserContext;
let page: Page;
/** Console errors, uncaught exceptions and 4xx/5xx answers of the page, since the last test began. */
let problems: string[] = [];

const tree = () => page.getByRole('tree', { name: 'Spans' });
const treeItem = (name: string) => tree().getByRole('treeitem').filter({ hasText: name });
/** The text of the tree's active row (aria-activedescendant). */
const active = () =>
  tree().evaluate((el) => {
    const { document } = globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null } | null } };
    return document.getElementById((el as unknown as { getAttribute(name: string): string | null }).getAttribute('aria-activedescendant') ?? '')?.textContent ?? '';
  });
const spanHeading = (name: string) => page.getByRole('heading', { name: `Span: ${name}` });

beforeAll(async () => {
  dashboard = await startDashboard({ workers: true });
  ({ ctx, url: appUrl, browser } = dashboard);
  // Team: the control actions are listed from that plan on.
  const tenant = await ctx.app.services.tenants.create('Trace view', 'team');
  tenantId = tenant.tenant_id;
  const sent = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: bearer(tenant.api_key), payload: { traces: [ticket, followUp, big] } });
  expect(sent.statusCode, sent.body).toBe(201);
  const readable = await pollUntil(
    () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${big.id}/tree`, headers: bearer(tenant.api_key) }),
    (res) => res.statusCode === 200 && res.json().spans.length === BIG,
    60_000,
    250,
  );
  expect(readable.statusCode, readable.body.slice(0, 300)).toBe(200);
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: appUrl });
});

afterAll(async () => dashboard?.close());

beforeEach(() => {
  problems.length = 0;
});

describe('signed out', () => {
  it('opens the sign-in page without a console error or a refused request', async () => {
    const fresh = await context.newPage();
    page = fresh;
    problems = watchProblems(fresh);
    // Asked without a session, GET /v1/me is a 401 (logged by Chromium) unless the navigation to the
    // sign-in page happens to cancel it first: no API call at all is the dependable check.
    const apiCalls: string[] = [];
    fresh.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) apiCalls.push(r.url());
    });
    await fresh.goto(`${appUrl}/traces/${ticket.id}`);
    await fresh.waitForURL(/\/sign-in\?next=/, WAIT);
    await fresh.getByLabel('Tenant').waitFor(WAIT);
    expect(apiCalls).toEqual([]);
    expect(await seriousA11yViolations(fresh)).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe('the trace view', () => {
  beforeAll(async () => {
    await signInForDevelopment(page, appUrl, tenantId, 'member');
  });

  it('shows the spans as a tree beside their timeline, with type, duration, tokens, cost and errors per row', async () => {
    await page.goto(`${appUrl}/traces/${ticket.id}`);
    await page.getByRole('heading', { name: 'support ticket', level: 1 }).waitFor(WAIT);
    const items = tree().getByRole('treeitem');
    await expect.poll(() => items.count(), WAIT).toBe(4);
    expect(await items.allTextContents()).toEqual([
      expect.stringContaining('handle ticket'),
      expect.stringContaining('answer with tools'),
      expect.stringContaining('lookup order'),
      expect.stringContaining('fetch carrier status'),
    ]);
    expect(await items.evaluateAll((els) => els.map((el) => el.getAttribute('aria-level')))).toEqual(['1', '2', '2', '3']);
    const llmRow = await treeItem('answer with tools').textContent();
    expect(llmRow).toContain('llm');
    expect(llmRow).toContain('500 ms');
    expect(llmRow).toContain('15'); // 12 prompt + 3 completion tokens
    expect(llmRow).toContain('$0.0123');
    expect(await treeItem('fetch carrier status').textContent()).toContain('error');

    // The timeline: each span's bar on its own row, placed by its start and length in the trace's 1 s.
    const bar = (name: string) => treeItem(name).locator('.span-bar').evaluate((el) => {
      const { style } = el as unknown as { style: { left: string; width: string } };
      return [style.left, style.width];
    });
    expect(await bar('handle ticket')).toEqual(['0%', '100%']);
    expect(await bar('answer with tools')).toEqual(['10%', '50%']);
    expect(await bar('lookup order')).toEqual(['70%', '30%']);
    expect(await bar('fetch carrier status')).toEqual(['75%', '25%']);
    const top = async (locator: ReturnType<Page['locator']>) => (await locator.boundingBox())!.y;
    const row = treeItem('lookup order');
    expect(await top(row.locator('.span-bar'))).toBeGreaterThanOrEqual(await top(row));
    expect(await top(row.locator('.span-bar'))).toBeLessThan((await top(row)) + 30);

    // The first span is open.
    await spanHeading('handle ticket').waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('collapses and expands a span with the mouse; searches within the tree', async () => {
    await treeItem('lookup order').locator('.span-toggle').click();
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(3);
    expect(await treeItem('lookup order').getAttribute('aria-expanded')).toBe('false');
    await treeItem('lookup order').locator('.span-toggle').click();
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(4);

    // A search shows the matches and their ancestors, even under a collapsed span.
    await treeItem('lookup order').locator('.span-toggle').click();
    await page.getByLabel('Search spans').fill('carrier');
    await expect.poll(() => tree().getByRole('treeitem').allTextContents(), WAIT).toEqual([
      expect.stringContaining('handle ticket'),
      expect.stringContaining('lookup order'),
      expect.stringContaining('fetch carrier status'),
    ]);
    await page.getByText('1 of 4 spans match').waitFor(WAIT);
    await page.getByLabel('Search spans').fill('timed out'); // the error's text
    await expect.poll(() => tree().locator('.match').allTextContents(), WAIT).toEqual([expect.stringContaining('fetch carrier status')]);
    await page.getByLabel('Search spans').fill('no such span');
    await page.getByText('No span matches.').waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('Search spans').fill('');
    await page.getByRole('button', { name: 'Expand all' }).click();
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(4);
    expect(problems).toEqual([]);
  });

  it('moves in the tree from the keyboard: j/k, arrows to collapse and expand, Enter opens', async () => {
    await tree().focus();
    expect(await active()).toContain('handle ticket');
    await page.keyboard.press('j');
    expect(await active()).toContain('answer with tools');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await active()).toContain('fetch carrier status');
    await page.keyboard.press('k');
    expect(await active()).toContain('lookup order');
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(3);
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(4);
    await page.keyboard.press('ArrowRight'); // expanded: → goes to its first child
    expect(await active()).toContain('fetch carrier status');
    await page.keyboard.press('ArrowLeft'); // a leaf: ← goes to its parent
    expect(await active()).toContain('lookup order');
    await page.keyboard.press('Enter');
    await spanHeading('lookup order').waitFor(WAIT);
    expect(await treeItem('lookup order').getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('Enter'); // the open span again: folds it
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(3);
    await page.keyboard.press('Enter');
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(4);

    // / goes to the search, Enter there to the first match in the tree, Esc back with the search cleared.
    await page.keyboard.press('/');
    await page.keyboard.type('carrier');
    await page.keyboard.press('Enter');
    expect(await active()).toContain('fetch carrier status');
    const treeHasFocus = () => tree().evaluate((el) => el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement);
    expect(await treeHasFocus()).toBe(true);
    await page.keyboard.press('/');
    await page.keyboard.press('Escape');
    expect(await treeHasFocus()).toBe(true);
    expect(await page.getByLabel('Search spans').inputValue()).toBe('');
    await expect.poll(() => tree().getByRole('treeitem').count(), WAIT).toBe(4);
    expect(problems).toEqual([]);
  });

  it('shows a JSON input as a folding tree and a markdown output as text, rendered on request, safely', async () => {
    const input = page.getByRole('region', { name: 'Span input' });
    await input.locator('details').first().waitFor(WAIT);
    expect(await input.textContent()).toContain('"eu"');
    const filters = input.locator('summary', { hasText: 'filters:' });
    const isOpen = () => filters.evaluate((el) => (el as unknown as { parentElement: { open: boolean } }).parentElement.open);
    expect(await isOpen()).toBe(true);
    await filters.click();
    expect(await isOpen()).toBe(false);

    const output = page.getByRole('region', { name: 'Span output' });
    expect(await output.locator('pre').textContent()).toContain('The order is **shipped**');
    await output.getByRole('button', { name: 'Markdown' }).click();
    await output.getByRole('heading', { name: 'Shipping report' }).waitFor(WAIT);
    expect(await output.locator('strong').textContent()).toBe('shipped');
    expect(await output.locator('code').textContent()).toBe('tracked');
    expect(await output.locator('li').allTextContents()).toEqual(['first item', 'second item']);
    // Markup in the text stays text; a javascript: link is no link.
    expect(await output.locator('img').count()).toBe(0);
    expect(await output.textContent()).toContain('<img src=x onerror=alert(1)>');
    expect(await output.getByRole('link').count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);

    await output.getByRole('button', { name: 'Copy the span output' }).click();
    await output.getByRole('status').getByText('Copied.').waitFor(WAIT);
    expect(await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(markdownOutput);
    expect(problems).toEqual([]);
  });

  it('shows chat messages as a conversation: roles, tool calls and tool results', async () => {
    await treeItem('answer with tools').click();
    await spanHeading('answer with tools').waitFor(WAIT);
    const input = page.getByRole('region', { name: 'Span input' });
    const messages = input.locator('.conversation > li');
    await expect.poll(() => messages.count(), WAIT).toBe(4);
    expect(await messages.locator('.message-role').allTextContents()).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(await messages.nth(1).textContent()).toContain('Where is my order 42?');
    expect(await messages.nth(2).locator('.tool-call').textContent()).toContain('lookup_order');
    expect(await messages.nth(2).locator('.tool-call pre').textContent()).toBe('{\n  "order_id": 42\n}');
    expect(await messages.nth(3).locator('.tool-result').textContent()).toContain('call_1');
    expect(await messages.nth(3).locator('.tool-result').textContent()).toContain('"shipped"');

    const output = page.getByRole('region', { name: 'Span output' });
    expect(await output.locator('.message-role').allTextContents()).toEqual(['assistant']);
    expect(await output.textContent()).toContain('Your order has shipped.');
    expect(await output.locator('.tool-call').textContent()).toContain('send_email');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'trace-view');
    // The recorded JSON, on request.
    await output.getByRole('button', { name: 'JSON' }).click();
    await output.locator('details').first().waitFor(WAIT);
    expect(await output.locator('.conversation').count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('shows the evaluations, feedback, failure clusters and control actions in tabs', async () => {
    const tabs = page.getByRole('tablist', { name: 'About this trace' }).getByRole('tab');
    expect(await tabs.allTextContents()).toEqual(['Evaluations', 'Feedback', 'Failure clusters', 'Control actions']);
    await page.getByText('No evaluations of this trace yet.').waitFor(WAIT);
    await tabs.first().focus();
    await page.keyboard.press('ArrowRight');
    await page.getByText('No feedback on this trace yet.').waitFor(WAIT);
    await page.keyboard.press('ArrowRight');
    await page.getByText('No span of this trace is in a failure cluster.').waitFor(WAIT);
    await page.keyboard.press('ArrowRight');
    await page.getByText('No control action on this trace.').waitFor(WAIT);
    expect(await page.getByRole('tab', { name: 'Control actions' }).getAttribute('aria-selected')).toBe('true');
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('opens a trace of 10,000 spans rendering only the rows in view, and reaches its last span from the keyboard', async () => {
    await page.goto(`${appUrl}/traces/${big.id}`);
    await page.getByRole('heading', { name: 'big trace', level: 1 }).waitFor(WAIT);
    await page.getByText('10,000 spans', { exact: true }).waitFor(WAIT);
    const rendered = tree().getByRole('treeitem');
    const count = await rendered.count();
    expect(count).toBeGreaterThan(10);
    expect(count).toBeLessThan(100);
    // The tree scrolls over the height of every row.
    expect(await tree().evaluate((el) => el.scrollHeight)).toBe(BIG * 30);

    await tree().focus();
    await page.keyboard.press('End');
    expect(await active()).toContain(big.spans[BIG - 1]!.name);
    expect(await tree().evaluate((el) => el.scrollTop)).toBeGreaterThan(0);
    expect(await rendered.count()).toBeLessThan(100);
    await page.keyboard.press('Enter');
    await spanHeading(big.spans[BIG - 1]!.name as string).waitFor(WAIT);

    // Collapsing the root leaves one row.
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => rendered.count(), WAIT).toBe(1);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('shows a session as a conversation: its traces in order, each turn\'s input and output', async () => {
    await page.goto(`${appUrl}/sessions/${SESSION}`);
    await page.getByRole('heading', { name: `Session ${SESSION}`, level: 1 }).waitFor(WAIT);
    const turns = page.locator('.session-turns > li');
    await expect.poll(() => turns.count(), WAIT).toBe(2);
    expect(await turns.locator('.session-turn-head a').allTextContents()).toEqual(['support ticket', 'follow-up']);
    const input2 = page.getByRole('region', { name: 'Input of turn 2' });
    expect(await input2.locator('.message-role').allTextContents()).toEqual(['user']);
    expect(await input2.textContent()).toContain('And when will it arrive?');
    const output2 = page.getByRole('region', { name: 'Output of turn 2' });
    expect(await output2.locator('.message-role').allTextContents()).toEqual(['assistant']);
    await output2.getByRole('button', { name: 'Markdown' }).click();
    expect(await output2.locator('strong').textContent()).toBe('Friday');
    expect(await page.getByRole('region', { name: 'Output of turn 1' }).locator('.tool-call').textContent()).toContain('send_email');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'session-conversation');

    await turns.getByRole('link', { name: 'follow-up' }).click();
    await page.getByRole('heading', { name: 'follow-up', level: 1 }).waitFor(WAIT);
    expect(problems).toEqual([]);
  });
});

describe('an OTLP trace', () => {
  const traceHex = otelTraceId();
  const rootHex = otelSpanId();
  const childHex = otelSpanId();

  beforeAll(async () => {
    const otel = await ctx.app.services.tenants.create('OTel view', 'pro');
    const spans = [
      anOtlpSpan({ traceId: traceHex, spanId: rootHex, name: 'agent run', startTimeUnixNano: ns(0), endTimeUnixNano: ns(900_000_000) }),
      anOtlpSpan({ traceId: traceHex, spanId: childHex, parentSpanId: rootHex, name: 'llm call', startTimeUnixNano: ns(100_000_000), endTimeUnixNano: ns(600_000_000) }),
    ];
    const sent = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: { ...bearer(otel.api_key), 'content-type': 'application/json' }, payload: JSON.stringify(anOtlpRequest(spans)) });
    expect(sent.statusCode, sent.body).toBe(200);
    await pollUntil(
      () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${traceHex}`, headers: bearer(otel.api_key) }),
      (res) => res.statusCode === 200 && res.json().span_count === 2,
    );
    await signInForDevelopment(page, appUrl, otel.tenant_id, 'viewer');
  });

  it('shows the OTel trace and span ids in hex, not the UUIDs they are stored as', async () => {
    await page.goto(`${appUrl}/traces/${traceHex}`);
    await page.getByRole('heading', { name: 'agent run', level: 1 }).waitFor(WAIT);
    const fact = (term: string) => page.locator('.facts > div', { has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) }).locator('dd');
    expect(await fact('OTel trace id').locator('code').textContent()).toBe(traceHex);
    expect(await fact('Trace id').count()).toBe(0);
    await treeItem('llm call').click();
    await spanHeading('llm call').waitFor(WAIT);
    expect(await fact('OTel span id').locator('code').textContent()).toBe(childHex);
    expect(await fact('OTel parent span id').textContent()).toBe(rootHex);
    expect(await page.locator('main').textContent()).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
    // Below the Team plan the control actions tab says why it lists none, without asking the API.
    await page.getByRole('tab', { name: 'Control actions' }).click();
    await page.getByText("The control loop's actions: needs the Team plan or above (this tenant is on Pro).").waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
