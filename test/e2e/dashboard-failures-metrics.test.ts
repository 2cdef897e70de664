import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { signatureOf } from '../../src/modules/webhooks/delivery.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { HttpsReceiver, makeTestCa, trustInThisProcess } from '../helpers/https-receiver.js';
import { freePort } from '../helpers/server-process.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { ensureWebBuilt, launchChromium, WAIT, signInForDevelopment, openFromNav, checkPage } from '../helpers/web.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * Failures, Metrics and Webhooks (issue 11), signed in for development: failing traces ingested
 * through the API and clustered by a rule (the detection workers run in-process), their metrics
 * rolled up and charted with an anomaly shaded, and a webhook created, tested and delivered to an
 * https receiver on loopback. Each page passes axe and is screenshotted.
 */
const SECRET = 'whsec-e2e-0123456789abcdef';
const WEB_DIST = path.resolve(import.meta.dirname, '../../web/dist');
const ca = makeTestCa();
trustInThisProcess(ca);

let ctx: TestContext;
let workers: Workers;
let receiver: HttpsReceiver;
/** Paths the receiver answers with 503. */
const down = new Set<string>();
let appUrl: string;
let browser: Browser;
let page: Page;
let t: TestTenant;
// Within the default range of the metrics page (the last 24 hours).
const at = new Date(Date.now() - 90 * 60_000);
const minute = (n: number) => new Date(at.getTime() + n * 60_000);

const signIn = (role: 'owner' | 'member' | 'viewer') => signInForDevelopment(page, appUrl, t.tenantId, role);

const open = (link: string, heading: string) => openFromNav(page, link, heading);

const check = (name?: string) => checkPage(page, name);

const clusters = async () => (await getJson(ctx.app, t, '/v1/failures/clusters', { limit: 100 })).body.clusters as { type: string; count: number; sample_error: string }[];

beforeAll(async () => {
  ensureWebBuilt();
  const port = await freePort();
  // Retries 10 ms apart (then doubling): a delivery uses up its 8 attempts in about 2.5 s.
  ctx = await startApp({ LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true', LOOPTRACE_WEBHOOK_RETRY_BASE_MS: '10', REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx, ['metrics-rollup', 'failures-detect', 'webhooks', 'webhooks-reconcile']);
  receiver = await HttpsReceiver.start(ca, (req) => (down.has(req.path) ? { status: 503, body: 'down' } : { status: 200, body: 'thanks from the receiver' }));
  await ctx.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  t = await createTenant(ctx.app, 'pro');

  // A rule, then three timeouts (one cluster) and four healthy traces.
  const rule = await ctx.app.inject({ method: 'POST', url: '/v1/failure-rules', headers: t.auth, payload: { name: 'timeouts', match: { error_contains: 'timed out' } } });
  expect(rule.statusCode, rule.body).toBe(201);
  const failing = (n: number) => aTrace({ spans: [aSpan({ error: `Request ${n} timed out after ${n}s (request ${randomUUID()})`, cost: 0.002 }, minute(n))] });
  // Healthy traces in the hours before, so that the charts draw lines.
  const healthy = (hoursBefore: number) =>
    aTrace({ spans: [aSpan({ cost: 0.001 * hoursBefore, end_time: new Date(minute(-60 * hoursBefore).getTime() + 300 * hoursBefore).toISOString() }, minute(-60 * hoursBefore))] });
  const traces = [failing(1), failing(2), failing(3), healthy(1), healthy(2), healthy(3), healthy(4)];
  await ingestTraces(ctx.app, t, traces);
  // Two refusals for the page's received/stored/refused: a trace sent again (409) and one without a name (422).
  expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: traces[0] })).statusCode).toBe(409);
  expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: { ...aTrace(), name: undefined } })).statusCode).toBe(422);
  const found = await pollUntil(clusters, (cs) => cs.some((c) => c.count >= 3), 300, 100);
  expect(found).toMatchObject([{ count: 3 }]);
  const metrics = await pollUntil(
    async () => (await getJson(ctx.app, t, '/v1/metrics')).body as { series: { points: { trace_count: number }[] }[] },
    (m) => m.series.flatMap((s) => s.points).reduce((n, p) => n + p.trace_count, 0) >= 7,
    300,
    100,
  );
  expect(metrics.series[0]!.points.reduce((n, p) => n + p.trace_count, 0)).toBe(7);

  // An anomaly on the error rate, as the detector would store it, in the window of the failures.
  const windowStart = new Date(Math.floor(minute(1).getTime() / 300_000) * 300_000);
  await ctx.stores.sql`
    insert into anomalies (id, tenant_id, project_id, metric, window_start, window_end, observed, expected, score, severity)
    values (${randomUUID()}, ${t.tenantId}, ${t.projectId}, 'error_rate', ${windowStart}, ${new Date(windowStart.getTime() + 300_000)}, 0.5, 0.02, 7.4, 'critical')`;

  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await workers?.close();
  await Promise.all([ctx?.close(), receiver?.close()]);
});

describe('failures', () => {
  it('lists the cluster with its count and example traces, and shows its detail', async () => {
    await signIn('owner');
    await open('Failures', 'Failures');
    const row = page.locator('table.clusters tbody tr', { hasText: 'timed out' });
    await row.waitFor(WAIT);
    expect((await row.locator('td.num').allTextContents()).map((s) => s.trim())).toEqual(['3', '3']);
    expect(await row.getByRole('link', { name: /^Example trace/ }).count()).toBe(3);
    await check('failures');

    // The filters live in the URL: another type shows nothing.
    await page.getByLabel('Type').selectOption('rate_limit');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No failure clusters for these filters.').waitFor(WAIT);
    expect(page.url()).toContain('type=rate_limit');
    await page.getByRole('button', { name: 'Clear' }).click();

    await row.getByRole('link', { name: 'Timeout' }).click();
    await page.getByRole('heading', { level: 1, name: 'Failure cluster: Timeout' }).waitFor(WAIT);
    expect(await page.locator('.facts').textContent()).toContain('Matching spans3');
    await check();
    await page.getByRole('link', { name: /^Example trace 1/ }).click();
    await page.waitForURL(/\/traces\/[0-9a-f-]{36}$/, WAIT);
    const clusterUrl = /\/failures\/clusters\/[0-9a-f-]{36}$/;

    // The trace links back to its failure cluster.
    await page.getByRole('tab', { name: 'Failure clusters' }).click();
    const link = page.locator('.trace-clusters').getByRole('link', { name: 'Timeout' });
    await link.waitFor(WAIT);
    expect(await page.locator('.trace-clusters').textContent()).toContain('(3 traces)');
    await check();
    await link.click();
    await page.waitForURL(clusterUrl, WAIT);
    await page.getByRole('heading', { level: 1, name: 'Failure cluster: Timeout' }).waitFor(WAIT);
  });

  it('lists the failure rules and creates one', async () => {
    await open('Failures', 'Failures');
    await page.getByRole('navigation', { name: 'Failures' }).getByRole('link', { name: 'Rules' }).click();
    await page.getByRole('heading', { level: 1, name: 'Failure rules' }).waitFor(WAIT);
    await page.locator('table.rules tbody tr', { hasText: 'timeouts' }).waitFor(WAIT);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('slow calls');
    await page.getByRole('spinbutton', { name: 'Latency over (ms)' }).fill('5000');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.getByText('Created the rule slow calls.').waitFor(WAIT);
    const slow = page.locator('table.rules tbody tr', { hasText: 'slow calls' });
    await slow.getByText('latency_ms_over').waitFor(WAIT);
    expect(await slow.getByRole('button', { name: 'Delete slow calls' }).isEnabled()).toBe(true);
    await check();
  });

  it('disables and re-enables a rule, then deletes it after confirming', async () => {
    const slow = page.locator('table.rules tbody tr', { hasText: 'slow calls' });
    const stored = async () => ((await getJson(ctx.app, t, '/v1/failure-rules')).body.failure_rules as { name: string; enabled: boolean }[]).find((r) => r.name === 'slow calls');
    await slow.getByRole('button', { name: 'Disable slow calls' }).click();
    await slow.getByRole('button', { name: 'Enable slow calls' }).waitFor(WAIT);
    expect(await stored()).toMatchObject({ enabled: false });
    expect(await slow.textContent()).toContain('disabled');
    await slow.getByRole('button', { name: 'Enable slow calls' }).click();
    await slow.getByRole('button', { name: 'Disable slow calls' }).waitFor(WAIT);
    expect(await stored()).toMatchObject({ enabled: true });

    await slow.getByRole('button', { name: 'Delete slow calls' }).click();
    await slow.getByRole('group', { name: 'Delete slow calls' }).getByRole('button', { name: 'Delete now' }).click();
    await slow.waitFor({ state: 'detached', ...WAIT });
    expect(await stored()).toBeUndefined();
    expect(await page.getByRole('alert').count()).toBe(0);
  });
});

describe('metrics', () => {
  it('charts the traces with the anomaly shaded and listed, loading the chart code lazily', async () => {
    await open('Metrics', 'Metrics');
    const traces = page.locator('figure#chart-traces, figure[aria-labelledby="chart-traces-title"]');
    await traces.locator('canvas').first().waitFor(WAIT);
    expect(Number(await traces.getAttribute('data-points'))).toBeGreaterThan(0);
    // Something was drawn: the canvas is not blank.
    const drawn = await traces.locator('canvas').first().evaluate((canvas) => {
      const c = canvas as unknown as { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } };
      return c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((v) => v !== 0);
    });
    expect(drawn).toBe(true);
    expect(await page.locator('figure.chart canvas').count()).toBeGreaterThanOrEqual(5);
    const anomaly = page.locator('table.anomalies tbody tr', { hasText: 'Error rate' });
    await anomaly.waitFor(WAIT);
    expect(await anomaly.textContent()).toContain('critical');
    // The screenshot shows the ingest counts below the anomalies too.
    await page.locator('table.ingest-totals').waitFor(WAIT);
    await check('metrics');
  });

  it('shows what ingest received, stored and refused, per minute and by reason', async () => {
    const totals = page.locator('table.ingest-totals tbody tr');
    await totals.first().waitFor(WAIT);
    const cells = async (row: ReturnType<typeof page.locator>) => (await row.locator('th, td').allTextContents()).map((s) => s.trim());
    // 7 stored, one duplicate and one invalid trace, of one span each.
    expect(await cells(totals.nth(0))).toEqual(['Traces', '9', '7', '2']);
    expect(await cells(totals.nth(1))).toEqual(['Spans', '9', '7', '2']);
    const reasons = page.locator('table.ingest-refusals tbody tr');
    expect(await cells(reasons.filter({ hasText: 'Invalid' }))).toEqual(['Invalid', '1', '1']);
    expect(await cells(reasons.filter({ hasText: 'Duplicate' }))).toEqual(['Duplicate id (409)', '1', '1']);
    expect(await reasons.count()).toBe(2);
    expect(Number(await page.locator('figure[aria-labelledby="chart-ingest-title"]').getAttribute('data-points'))).toBeGreaterThan(0);

    // Another project has none of it (the page is opened again, so that its picker lists the new project).
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'quiet' } })).statusCode).toBe(201);
    await open('Failures', 'Failures');
    await open('Metrics', 'Metrics');
    await page.locator('select[name="project_id"]').selectOption({ label: 'quiet' });
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Nothing was refused in this range.').waitFor(WAIT);
    expect(await cells(page.locator('table.ingest-totals tbody tr').nth(0))).toEqual(['Traces', '0', '0', '0']);
    await check();
    await page.getByRole('button', { name: 'Clear' }).click();
  });

  it('keeps the initial JS within budget, without the charting library', () => {
    const html = readFileSync(path.join(WEB_DIST, 'index.html'), 'utf8');
    const initial = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(initial.length).toBeGreaterThan(0);
    const gzipped = initial.reduce((n, file) => n + gzipSync(readFileSync(path.join(WEB_DIST, file))).length, 0);
    expect(gzipped).toBeLessThanOrEqual(250 * 1024);
    const chartChunks = readdirSync(path.join(WEB_DIST, 'assets')).filter((f) => f.endsWith('.js') && readFileSync(path.join(WEB_DIST, 'assets', f), 'utf8').includes('u-legend'));
    expect(chartChunks.length).toBeGreaterThan(0);
    expect(chartChunks.some((f) => initial.includes(`assets/${f}`))).toBe(false);
  });
});

describe('webhooks', () => {
  it('creates a webhook, sends a test and shows a delivery', async () => {
    await open('Webhooks', 'Webhooks');
    await page.getByRole('textbox', { name: 'URL (https)' }).fill(receiver.url('/hook'));
    await page.getByLabel('Secret (at least 16 characters)').fill(SECRET);
    await page.getByRole('checkbox', { name: /anomaly\.detected/ }).check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByText(`Created the webhook for ${receiver.url('/hook')}.`).waitFor(WAIT);
    const hook = page.getByRole('listitem', { name: `Webhook ${receiver.url('/hook')}` });
    await hook.waitFor(WAIT);

    await hook.getByRole('button', { name: 'Send a test' }).click();
    await hook.getByText('Test answered: status 200').waitFor(WAIT);
    await hook.getByText('thanks from the receiver').waitFor(WAIT);
    expect(receiver.to('/hook').length).toBe(1);

    // A new cluster fires failure.detected, delivered by the worker.
    await ingestTraces(ctx.app, t, [aTrace({ spans: [aSpan({ error: 'Connection to the vector store timed out' }, minute(10))] })]);
    expect(await pollUntil(async () => receiver.to('/hook').length, (n) => n >= 2, 300, 100)).toBe(2);
    await hook.getByRole('button', { name: 'Show the delivery log' }).click();
    const delivery = hook.locator('table.deliveries tbody tr', { hasText: 'failure.detected' });
    await delivery.waitFor(WAIT);
    expect(await delivery.textContent()).toContain('200');
    await check('webhooks');
  });

  it('edits a webhook (disabled, events changed, secret kept) and deletes it after confirming', async () => {
    const url = receiver.url('/hook');
    const stored = async () => {
      const list = (await getJson(ctx.app, t, '/v1/webhooks')).body.webhooks as { id: string; url: string; enabled: boolean; events: string[] }[];
      return list.find((w) => w.url === url);
    };
    const before = await stored();
    const hook = page.getByRole('listitem', { name: `Webhook ${url}` });
    await hook.getByRole('button', { name: `Edit the webhook for ${url}` }).click();
    const edit = page.getByRole('form', { name: `Edit the webhook for ${url}` });
    await edit.waitFor(WAIT);
    expect(await edit.getByRole('textbox', { name: 'URL (https)' }).inputValue()).toBe(url);
    await edit.getByRole('checkbox', { name: /failure\.detected/ }).uncheck();
    await edit.getByRole('checkbox', { name: /^Enabled/ }).uncheck();
    await check();
    await edit.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText(`Saved the webhook for ${url}.`).waitFor(WAIT);
    expect(await stored()).toMatchObject({ id: before!.id, enabled: false, events: ['anomaly.detected'] });
    await hook.getByText('disabled', { exact: true }).waitFor(WAIT);

    // The secret was kept: a test still signs with it and the receiver still answers.
    const received = receiver.to('/hook').length;
    await hook.getByRole('button', { name: 'Send a test' }).click();
    await hook.getByText('Test answered: status 200').waitFor(WAIT);
    const ping = receiver.to('/hook')[received]!;
    expect(ping.headers['x-service-signature']).toBe(signatureOf(ping.rawBody.toString(), SECRET));

    await hook.getByRole('button', { name: `Delete the webhook for ${url}` }).click();
    expect(await stored()).toBeDefined();
    await hook.getByRole('group', { name: `Delete the webhook for ${url}` }).getByRole('button', { name: 'Delete now' }).click();
    await hook.waitFor({ state: 'detached', ...WAIT });
    expect(await stored()).toBeUndefined();
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('lists deliveries that used up their attempts; an owner retries one and discards another', { timeout: 60_000 }, async () => {
    type Entry = { id: string; summary: string; attempts: number; resolution: string | null };
    const entries = async () => (await getJson(ctx.app, t, '/v1/dlq', { state: 'all' })).body.entries as Entry[];
    const hookTo = async (path: string) => {
      down.add(path);
      const res = await ctx.app.inject({ method: 'POST', url: '/v1/webhooks', headers: t.auth, payload: { url: receiver.url(path), secret: SECRET } });
      expect(res.statusCode, res.body).toBe(201);
      return `failure.detected to webhook ${res.json().id}`;
    };
    const [toRetry, toDiscard] = [await hookTo('/down-retry'), await hookTo('/down-discard')];
    await ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: t.projectId, data: { e2e: 'dead letters' } });
    await pollUntil(entries, (all) => all.filter((e) => e.resolution === null).length === 2, 300, 100);

    await page.reload();
    const section = page.getByRole('region', { name: 'Failed deliveries (dead letters)' });
    const row = (summary: string) => section.locator('tbody tr', { hasText: summary });
    await row(toRetry).waitFor(WAIT);
    expect(await row(toRetry).textContent()).toContain('HTTP 503');
    expect(await row(toRetry).locator('td.num').textContent()).toBe('8');
    expect(await row(toRetry).textContent()).toContain(receiver.url('/down-retry'));
    await check('webhooks-dead-letters');

    // The receiver is back: a retry delivers from the first attempt.
    down.delete('/down-retry');
    const before = receiver.to('/down-retry').length;
    await row(toRetry).getByRole('button', { name: `Retry ${toRetry}` }).click();
    await section.getByText(`Retrying ${toRetry} from its first attempt.`).waitFor(WAIT);
    await row(toRetry).waitFor({ state: 'detached', ...WAIT });
    expect(await pollUntil(async () => receiver.to('/down-retry').length, (n) => n > before, 300, 50)).toBe(before + 1);

    await row(toDiscard).getByRole('button', { name: `Discard ${toDiscard}` }).click();
    await row(toDiscard).waitFor({ state: 'detached', ...WAIT });
    expect(Object.fromEntries((await entries()).map((e) => [e.summary, e.resolution]))).toMatchObject({ [toRetry]: 'retried', [toDiscard]: 'discarded' });
    await section.getByText('No failed deliveries waiting.').waitFor(WAIT);
    await section.getByLabel('Show').selectOption('resolved');
    await row(toDiscard).getByText(/^discarded /).waitFor(WAIT);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('shows the owner-only controls disabled with the reason for a member', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in/, WAIT);
    await signIn('member');
    await page.goto(`${appUrl}/failures/rules`);
    await page.getByRole('heading', { level: 1, name: 'Failure rules' }).waitFor(WAIT);
    await page.getByText('Deleting rules: needs the owner role (you are member).').waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Delete timeouts' }).isDisabled()).toBe(true);
    await check();
    await page.goto(`${appUrl}/admin/webhooks`);
    await page.getByText('Retrying and discarding: needs the owner role (you are member).').waitFor(WAIT);
  });
});
