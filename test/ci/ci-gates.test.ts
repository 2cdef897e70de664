import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { startAppWithWorkers } from '../helpers/workers.js';
import { aTrace } from '../builders/traces.js';
import { aDataset, create, queryKeyAuth } from '../builders/resources.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

let ctx: TestContext;
let url: string;
beforeAll(async () => {
  ctx = await startAppWithWorkers(['dataset-runs']);
  url = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => ctx?.close());

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `looptrace ci gate` as a pipeline runs it: a subprocess that only talks HTTP to the server. */
function gate(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'ci', 'gate', ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** 7 of 10 traces answer "Paris": the eval version passes exactly those. */
async function gateFixture(t: TestTenant): Promise<{ datasetId: string; versionId: string }> {
  const traces = Array.from({ length: 10 }, (_, i) => aTrace({ output: i < 7 ? 'Paris' : 'Lyon' }));
  await ingestTraces(ctx.app, t, traces);
  const datasetId = (await create(ctx.app, '/v1/datasets', t.auth, aDataset({ name: 'capitals' }))).id;
  const items = await ctx.app.inject({ method: 'POST', url: `/v1/datasets/${datasetId}/items`, headers: t.auth, payload: { items: traces.map((tr) => ({ trace_id: tr.id })) } });
  expect(items.statusCode, items.body).toBe(201);
  const rule = await ctx.app.inject({
    method: 'POST',
    url: '/v1/eval-rules',
    headers: t.auth,
    payload: { name: 'says Paris', metric_name: 'paris', enabled: false, config: { provider: 'builtin', preset: 'contains', params: { value: 'Paris' } } },
  });
  return { datasetId, versionId: rule.json().current_version_id };
}

describe('CI gates', () => {
  it('`looptrace ci gate` exits 0 when the pass rate reaches the bar and 1 when it does not', async () => {
    const t = await createTenant(ctx.app);
    const { datasetId, versionId } = await gateFixture(t);
    const common = ['--dataset', datasetId, '--eval-version', versionId, '--url', url, '--interval', '0.2'];

    const pass = await gate([...common, '--min-pass-rate', '0.7'], { LOOPTRACE_API_KEY: t.apiKey });
    expect(pass.code, pass.stderr).toBe(0);
    expect(pass.stderr).toMatch(/items scored/);
    expect(JSON.parse(pass.stdout)).toMatchObject({ status: 'completed', item_count: 10, completed_count: 10, pass_rate: 0.7, passed: true, min_pass_rate: 0.7 });

    const fail = await gate([...common, '--min-pass-rate', '0.8', '--api-key', t.apiKey]);
    expect(fail.code).toBe(1);
    const failed = JSON.parse(fail.stdout);
    expect(failed).toMatchObject({ status: 'completed', pass_rate: 0.7, passed: false });
    const read = await ctx.app.inject({ method: 'GET', url: `/v1/ci/runs/${failed.id}`, headers: t.auth });
    expect(read.json()).toEqual(failed);
  });

  it('answers bad arguments with exit 2 and a refused gate with exit 1, never a stack trace', async () => {
    const t = await createTenant(ctx.app);
    const usage = await gate(['--dataset', 'nope', '--eval-version', 'x', '--min-pass-rate', '2', '--api-key', 'k']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--dataset must be a UUID/);
    const missing = '01900000-0000-7000-8000-000000000000';
    const refused = await gate(['--dataset', missing, '--eval-version', missing, '--min-pass-rate', '0.5', '--url', url, '--api-key', t.apiKey]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/404 not_found/);
    expect(refused.stderr).not.toMatch(/at .*\.ts:\d+/);
    const down = await gate(['--dataset', missing, '--eval-version', missing, '--min-pass-rate', '0.5', '--url', 'http://127.0.0.1:9', '--api-key', t.apiKey]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/is the server at/);
  });

  it('is tenant-scoped and read by query keys', async () => {
    const [t, other] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const { datasetId, versionId } = await gateFixture(t);
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/ci/runs', headers: t.auth, payload: { dataset_id: datasetId, eval_version_id: versionId, min_pass_rate: 0.5 } });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ status: 'pending', passed: null, pass_rate: null, item_count: 10 });
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/ci/runs/${created.json().id}`, headers: other.auth })).statusCode).toBe(404);
    const reader = await queryKeyAuth(ctx.app, t.auth);
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/ci/runs/${created.json().id}`, headers: reader })).statusCode).toBe(200);
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ci/runs', headers: reader, payload: { dataset_id: datasetId, eval_version_id: versionId, min_pass_rate: 0.5 } })).statusCode).toBe(403);
  });
});
