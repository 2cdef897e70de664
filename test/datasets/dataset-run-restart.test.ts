import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { evalRun } from '../../src/modules/datasets/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { freePort, ServerProcess } from '../helpers/server-process.js';

/**
 * A dataset run survives its worker being killed: a run of 1,000 items executed by the real server
 * process, SIGKILLed once between 100 and 900 items are scored, then started again on the same
 * stores. The run must finish with every item scored exactly once and the pass/fail counts an
 * independent oracle expects.
 */
const ITEMS = 1_000;
const passes = (i: number) => i % 3 !== 0;

let ctx: TestContext;
let tenant: TestTenant;
let server: ServerProcess;

beforeAll(async () => {
  // In-process app only to create the tenant and to read Postgres (same database as the server).
  ctx = await startApp();
  tenant = await createTenant(ctx.app);
  server = new ServerProcess(await freePort(), {
    LOOPTRACE_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'looptrace-dataset-run-')),
    LOOPTRACE_INSTANCE_ID: `dataset-run-test-${randomUUID()}`,
    REDIS_PREFIX: `looptrace-dataset-run-${process.pid}`,
    LOG_LEVEL: 'warn',
  });
  await server.start();
});

afterAll(async () => {
  await server?.stop();
  await ctx?.close();
});

async function call(method: 'GET' | 'POST', url: string, body?: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { ...tenant.auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function created(method: 'POST', url: string, body: object): Promise<Record<string, unknown>> {
  const res = await call(method, url, body);
  expect(res.status, JSON.stringify(res.json).slice(0, 500)).toBe(201);
  return res.json;
}

async function progress(runId: string): Promise<{ status: string; completed_count: number }> {
  const [row] = await ctx.stores.sql<{ status: string; completed_count: number }[]>`
    select status, completed_count from eval_runs where id = ${runId}`;
  return row!;
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, intervalMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

it('finishes a 1,000-item run killed midway with every item scored once', { timeout: 300_000 }, async () => {
  const traces = Array.from({ length: ITEMS }, (_, i) => {
    const output = passes(i) ? `ok #${i}` : `no #${i}`;
    return aTrace({ output, spans: [aSpan({ output })] });
  });
  await created('POST', '/v1/ingest/batch', { traces });
  const rule = await created('POST', '/v1/eval-rules', {
    name: 'says ok',
    metric_name: 'ok',
    config: { provider: 'builtin', preset: 'contains', params: { value: 'ok' } },
    sampling_rate: 0,
    enabled: false,
  });
  const dataset = await created('POST', '/v1/datasets', { name: 'restart' });
  await created('POST', `/v1/datasets/${String(dataset.id)}/items`, { items: traces.map((trace) => ({ trace_id: trace.id })) });
  const run = evalRun.parse(await created('POST', `/v1/datasets/${String(dataset.id)}/runs`, { eval_version_id: rule.current_version_id }));
  expect(run.item_count).toBe(ITEMS);

  let seen = 0;
  await waitFor(async () => {
    seen = (await progress(run.id)).completed_count;
    return seen >= 100;
  }, 120_000, 10);
  await server.kill();
  expect(seen, 'the run went past the kill window before it was seen').toBeLessThanOrEqual(900);
  const atKill = await progress(run.id);
  expect(atKill.status).toBe('running');
  expect(atKill.completed_count).toBeLessThan(ITEMS);

  await server.start();
  await waitFor(async () => (await progress(run.id)).status !== 'running', 240_000, 500);

  const final = await call('GET', `/v1/datasets/${String(dataset.id)}/runs/${run.id}`);
  const expectedPasses = traces.filter((_, i) => passes(i)).length;
  expect(final.json).toMatchObject({
    status: 'completed',
    completed_count: ITEMS,
    pass_count: expectedPasses,
    fail_count: ITEMS - expectedPasses,
    error_count: 0,
  });
  const rows = await ctx.stores.sql<{ trace_id: string; passed: boolean }[]>`
    select i.trace_id, r.passed from eval_run_results r join eval_run_items i using (run_id, item_id) where r.run_id = ${run.id}`;
  expect(rows.length).toBe(ITEMS);
  const passedByTrace = new Map(rows.map((row) => [row.trace_id, row.passed]));
  expect(passedByTrace.size).toBe(ITEMS);
  expect(traces.every((trace, i) => passedByTrace.get(trace.id) === passes(i))).toBe(true);
});
