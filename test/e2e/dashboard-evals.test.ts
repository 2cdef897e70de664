import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { freePort } from '../helpers/server-process.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { ensureWebBuilt, launchChromium, WAIT, signInForDevelopment, openFromNav, checkPage } from '../helpers/web.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * The Evaluations and Datasets pages (issue 11) with the real workers and builtin checks only (no
 * LLM): an eval rule created and edited in the browser, evaluations listed and two windows
 * compared, a dataset filled in the browser and a run watched until it completes.
 */

let ctx: TestContext;
let workers: Workers;
let appUrl: string;
let browser: Browser;
let page: Page;
let t: TestTenant;
const traces = [
  aTrace({ output: 'Paris.', spans: [aSpan({ output: 'Paris.' })] }),
  aTrace({ output: 'Rome.', spans: [aSpan({ output: 'Rome.' })] }),
  aTrace({ output: 'Berlin.', spans: [aSpan({ output: 'Berlin.' })] }),
];

beforeAll(async () => {
  ensureWebBuilt();
  ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx, ['dataset-runs', 'evals']);
  const port = await freePort();
  await ctx.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  t = await createTenant(ctx.app, 'pro');
  await ingestTraces(ctx.app, t, traces);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});

afterAll(async () => {
  await browser?.close();
  await workers?.close();
  await ctx?.close();
});

async function api(method: 'GET' | 'POST', url: string, payload?: object) {
  const res = await ctx.app.inject({ method, url, headers: t.auth, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
}

const signIn = (role: 'owner' | 'member' | 'viewer') => signInForDevelopment(page, appUrl, t.tenantId, role);

const open = (link: string, heading: string) => openFromNav(page, link, heading);

async function tab(link: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Evaluations' }).getByRole('link', { name: link }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor(WAIT);
}

const check = (name?: string) => checkPage(page, name);

describe('evaluations', () => {
  it('creates an eval rule with min_score_drop in the browser, then edits it into version 2', async () => {
    await signIn('owner');
    await open('Evaluations', 'Eval rules');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Exact answer');
    await page.getByRole('textbox', { name: 'Metric name' }).fill('exact');
    await page.getByRole('combobox', { name: /^Check/ }).selectOption('exact_match');
    await page.getByLabel('Check parameters (JSON object, optional)').fill('{"case_sensitive": false}');
    await page.getByLabel('Filter (JSON object of GET /v1/traces filters, optional)').fill('{"name": "answer question"}');
    await page.getByLabel('Sampling rate (0–1)').fill('0.5');
    await page.getByLabel('Threshold (0–1)').fill('0.8');
    await page.getByLabel('Min score drop (0–1)').fill('0.2');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Created Exact answer.' }).waitFor(WAIT);
    const row = page.locator('table.admin tbody tr', { hasText: 'Exact answer' });
    await row.getByText('v1').waitFor(WAIT);

    const stored = (await api('GET', '/v1/eval-rules')).body.eval_rules;
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      name: 'Exact answer',
      metric_name: 'exact',
      project_id: null,
      filter: { name: 'answer question' },
      sampling_rate: 0.5,
      threshold: 0.8,
      min_score_drop: 0.2,
      enabled: true,
      version: 1,
      config: { provider: 'builtin', preset: 'exact_match', params: { case_sensitive: false } },
    });

    await row.getByRole('button', { name: 'Edit Exact answer' }).click();
    await page.getByRole('heading', { name: 'Edit Exact answer' }).waitFor(WAIT);
    await page.getByLabel('Min score drop (0–1)').fill('0.3');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved Exact answer as version 2.' }).waitFor(WAIT);
    await row.getByText('v2').waitFor(WAIT);
    const edited = (await api('GET', `/v1/eval-rules/${stored[0].id}`)).body;
    expect(edited).toMatchObject({ version: 2, min_score_drop: 0.3, sampling_rate: 0.5 });
    await row.getByRole('button', { name: 'Show snapshot of Exact answer' }).click();
    await row.getByText(edited.current_version_id).waitFor(WAIT);
    await check('eval-rules');
  });

  it('lists evaluations with filters and compares two windows', async () => {
    const config = { provider: 'builtin', preset: 'exact_match', params: { expected: 'Paris.' } };
    for (const trace of traces.slice(0, 2)) {
      const res = await api('POST', '/v1/eval', { trace_id: trace.id, metric_name: 'paris', config });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
    }
    const done = await pollUntil(
      () => api('GET', '/v1/evals?metric_name=paris'),
      (r) => r.body.evals.length === 2 && r.body.evals.every((e: { status: string }) => e.status === 'completed'),
      300,
    );
    expect(done.body.evals.map((e: { passed: boolean }) => e.passed).sort()).toEqual([false, true]);

    await tab('Evaluations', 'Evaluations');
    await page.locator('table.admin tbody tr').nth(1).waitFor(WAIT);
    await page.getByRole('combobox', { name: /^Status/ }).selectOption('completed');
    await page.getByRole('textbox', { name: 'Metric' }).fill('paris');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/metric_name=paris/, WAIT);
    await page.locator('table.admin tbody tr', { hasText: 'passed' }).waitFor(WAIT);
    await expect.poll(() => page.locator('table.admin tbody tr').count(), WAIT).toBe(2);
    await check('evaluations');

    await tab('Compare windows', 'Compare windows');
    await page.getByRole('textbox', { name: 'Metric' }).fill('paris');
    await page.getByRole('button', { name: 'Compare' }).click();
    const table = page.locator('table.compare');
    await table.waitFor(WAIT);
    // Both evaluations fall in the candidate window (the last 7 days): 1 of 2 passed.
    expect(await table.getByRole('row', { name: /Pass rate/ }).textContent()).toContain('50%');
    expect(await table.getByRole('row', { name: /Evaluations/ }).textContent()).toMatch(/02/);
    await check();
  });
});

describe('datasets', () => {
  it('creates a dataset with items, exports it, and watches a run complete', async () => {
    await open('Datasets', 'Datasets');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Capitals');
    await page.getByRole('textbox', { name: 'Description' }).fill('golden answers');
    await page.getByRole('button', { name: 'Create dataset' }).click();
    await page.getByRole('status').filter({ hasText: 'Created Capitals.' }).waitFor(WAIT);
    await check();
    await page.getByRole('link', { name: 'Capitals' }).click();
    await page.getByRole('heading', { level: 1, name: 'Capitals' }).waitFor(WAIT);

    // Paris and Rome match their expected output (case-insensitively), Berlin does not.
    const expected = ['paris.', 'Rome.', 'Bonn.'];
    for (const [i, trace] of traces.entries()) {
      await page.getByRole('textbox', { name: 'Trace id' }).fill(trace.id);
      await page.getByRole('combobox', { name: /^Label/ }).selectOption(i < 2 ? 'pass' : 'fail');
      await page.getByLabel('Expected output (optional)').fill(expected[i]!);
      await page.getByRole('button', { name: 'Add item' }).click();
      await page.getByRole('status').filter({ hasText: `Added the item of trace ${trace.id}.` }).waitFor(WAIT);
      await page.locator('table.items tbody tr', { hasText: trace.id }).waitFor(WAIT);
    }
    expect(await page.locator('table.items tbody tr').count()).toBe(3);

    const download = page.waitForEvent('download', WAIT);
    await page.getByRole('button', { name: 'JSONL' }).click();
    expect((await download).suggestedFilename()).toBe('Capitals.jsonl');
    await check('datasets');

    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('heading', { level: 1, name: 'Eval run' }).waitFor(WAIT);
    const runId = page.url().split('/runs/')[1]!;
    // The page polls the run: no reload between the start and the end.
    await page.getByRole('status').filter({ hasText: 'Completed.' }).waitFor(WAIT);
    await page.getByText('3 / 3 items').waitFor(WAIT);
    expect(await page.locator('progress').getAttribute('value')).toBe('3');
    expect(await page.locator('progress').getAttribute('max')).toBe('3');
    expect(await page.locator('table.admin tbody tr').count()).toBe(3);
    const datasetId = page.url().split('/datasets/')[1]!.split('/')[0]!;
    const run = (await api('GET', `/v1/datasets/${datasetId}/runs/${runId}`)).body;
    expect(run).toMatchObject({ status: 'completed', item_count: 3, completed_count: 3, pass_count: 2, fail_count: 1 });
    await page.getByText('66.7%').waitFor(WAIT);
    await check('dataset-run');

    await page.getByRole('link', { name: '← Dataset' }).click();
    await page.locator('table.admin tbody tr', { hasText: 'completed' }).getByText('3 / 3 items').waitFor(WAIT);
  });
});

describe('as a viewer', () => {
  it('shows the write controls disabled with the reason', async () => {
    await signIn('viewer');
    await open('Evaluations', 'Eval rules');
    expect(await page.getByRole('button', { name: 'Create rule' }).isDisabled()).toBe(true);
    await page.getByText('Creating rules: needs the owner or member role (you are viewer).').waitFor(WAIT);
    await open('Datasets', 'Datasets');
    expect(await page.getByRole('button', { name: 'Create dataset' }).isDisabled()).toBe(true);
    await page.getByText('Creating datasets: needs the owner or member role (you are viewer).').waitFor(WAIT);
  });
});
