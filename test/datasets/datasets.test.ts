import { randomUUID } from 'node:crypto';
import type { PassThrough } from 'node:stream';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DatasetExport } from '../../src/modules/datasets/export.js';
import { addedItems, dataset, datasetList, evalRun, itemList, runDetail, runList, type DatasetItem } from '../../src/modules/datasets/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';

let ctx: TestContext;
let t: TestTenant;
let other: TestTenant;

beforeAll(async () => {
  ctx = await startAppWithWorkers(['dataset-runs']);
  [t, other] = await Promise.all([createTenant(ctx.app), createTenant(ctx.app)]);
});

afterAll(async () => {
  await ctx?.close();
});

type Headers = Record<string, string>;
const send = (method: 'POST' | 'PATCH' | 'DELETE', headers: Headers, url: string, payload?: object) =>
  ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

async function newDataset(tenant: TestTenant, name = 'golden set'): Promise<string> {
  const res = await send('POST', tenant.auth, '/v1/datasets', { name });
  expect(res.statusCode, res.body).toBe(201);
  return dataset.parse(res.json()).id;
}

async function addItems(tenant: TestTenant, datasetId: string, items: object[]): Promise<DatasetItem[]> {
  const res = await send('POST', tenant.auth, `/v1/datasets/${datasetId}/items`, { items });
  expect(res.statusCode, res.body).toBe(201);
  return addedItems.parse(res.json()).items;
}

/** Stored traces with the given outputs; returns [trace id, span id] per output. */
async function tracesWithOutputs(tenant: TestTenant, outputs: string[]): Promise<{ traceId: string; spanId: string }[]> {
  const traces = outputs.map((output) => aTrace({ output, spans: [aSpan({ output })] }));
  for (let i = 0; i < traces.length; i += 1_000) await ingestTraces(ctx.app, tenant, traces.slice(i, i + 1_000));
  return traces.map((trace) => ({ traceId: trace.id, spanId: trace.spans[0]!.id }));
}

describe('datasets', () => {
  it('creates, reads and lists datasets; another tenant sees none of them', async () => {
    const res = await send('POST', t.auth, '/v1/datasets', { name: ' regressions ', description: 'from prod' });
    expect(res.statusCode).toBe(201);
    const created = dataset.parse(res.json());
    expect(created).toMatchObject({ tenant_id: t.tenantId, name: 'regressions', description: 'from prod' });
    const second = await newDataset(t, 'second');

    expect((await getJson(ctx.app, t, `/v1/datasets/${created.id}`)).body).toEqual(created);
    expect((await getJson(ctx.app, other, `/v1/datasets/${created.id}`)).status).toBe(404);
    const first = datasetList.parse((await getJson(ctx.app, t, '/v1/datasets', { limit: 1 })).body);
    expect(first.datasets.map((d) => d.id)).toEqual([created.id]);
    const rest = datasetList.parse((await getJson(ctx.app, t, '/v1/datasets', { cursor: first.next_cursor! })).body);
    expect(rest.datasets.map((d) => d.id)).toContain(second);
    expect(datasetList.parse((await getJson(ctx.app, other, '/v1/datasets')).body).datasets).toEqual([]);
  });

  it('answers 422 without a name and 400 for a bad one', async () => {
    expect((await send('POST', t.auth, '/v1/datasets', { description: 'x' })).statusCode).toBe(422);
    expect((await send('POST', t.auth, '/v1/datasets', { name: 'x'.repeat(201) })).statusCode).toBe(400);
  });

  it('lets only an owner delete a dataset, and takes its items with it', async () => {
    const id = await newDataset(t);
    expect((await send('DELETE', t.auth, `/v1/datasets/${id}`)).statusCode).toBe(403);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    expect((await send('DELETE', bearer(await sessionToken(other.tenantId, 'owner')), `/v1/datasets/${id}`)).statusCode).toBe(404);
    expect((await send('DELETE', owner, `/v1/datasets/${id}`)).statusCode).toBe(204);
    expect((await getJson(ctx.app, t, `/v1/datasets/${id}/items`)).status).toBe(404);
  });
});

describe('dataset items', () => {
  it('adds one item or many, each with its trace project', async () => {
    const [a, b] = await tracesWithOutputs(t, ['one', 'two']);
    const id = await newDataset(t);
    const single = await send('POST', t.auth, `/v1/datasets/${id}/items`, { trace_id: a!.traceId, label: 'pass', expected: 'one' });
    expect(single.statusCode, single.body).toBe(201);
    expect(addedItems.parse(single.json()).items).toEqual([
      expect.objectContaining({ dataset_id: id, trace_id: a!.traceId, span_id: null, project_id: t.projectId, label: 'pass', expected: 'one' }),
    ]);
    const many = await addItems(t, id, [{ trace_id: b!.traceId, span_id: b!.spanId }, { trace_id: a!.traceId, label: null }]);
    expect(many.map((item) => [item.trace_id, item.span_id, item.label])).toEqual([
      [b!.traceId, b!.spanId, null],
      [a!.traceId, null, null],
    ]);
    const listed = itemList.parse((await getJson(ctx.app, t, `/v1/datasets/${id}/items`)).body);
    expect(listed.items.map((item) => item.id)).toEqual([addedItems.parse(single.json()).items[0]!.id, ...many.map((item) => item.id)]);
  });

  it('refuses the whole request when a trace is unknown or another tenant’s, naming it', async () => {
    const [mine] = await tracesWithOutputs(t, ['mine']);
    const [theirs] = await tracesWithOutputs(other, ['theirs']);
    const id = await newDataset(t);
    const unknown = randomUUID();
    const res = await send('POST', t.auth, `/v1/datasets/${id}/items`, {
      items: [{ trace_id: mine!.traceId }, { trace_id: unknown }, { trace_id: theirs!.traceId }],
    });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'not_found', missing_trace_ids: [unknown, theirs!.traceId] });
    expect(res.json().error).toContain(unknown);
    expect(itemList.parse((await getJson(ctx.app, t, `/v1/datasets/${id}/items`)).body).items).toEqual([]);
    expect((await send('POST', other.auth, `/v1/datasets/${id}/items`, { trace_id: theirs!.traceId })).statusCode).toBe(404);
  });

  it('validates the body: 422 for a missing trace_id, 400 for a mixed or oversized one', async () => {
    const id = await newDataset(t);
    const url = `/v1/datasets/${id}/items`;
    expect((await send('POST', t.auth, url, { label: 'pass' })).statusCode).toBe(422);
    expect((await send('POST', t.auth, url, { items: [{ label: 'pass' }] })).json()).toMatchObject({
      code: 'validation_error',
      details: [{ path: 'body.items.0.trace_id' }],
    });
    expect((await send('POST', t.auth, url, { items: [{ trace_id: randomUUID() }], trace_id: randomUUID() })).statusCode).toBe(400);
    expect((await send('POST', t.auth, url, { items: [] })).statusCode).toBe(400);
    expect((await send('POST', t.auth, url, { trace_id: randomUUID(), label: 'maybe' })).statusCode).toBe(400);
    expect((await send('POST', t.auth, url, { trace_id: randomUUID(), expected: 'x'.repeat(100_001) })).statusCode).toBe(400);
  });

  it('sets, clears and filters labels, and deletes items', async () => {
    const [trace] = await tracesWithOutputs(t, ['x']);
    const id = await newDataset(t);
    const [a, b, c] = await addItems(t, id, [{ trace_id: trace!.traceId }, { trace_id: trace!.traceId }, { trace_id: trace!.traceId }]);
    const patched = await send('PATCH', t.auth, `/v1/datasets/${id}/items/${a!.id}`, { label: 'fail' });
    expect(patched.json()).toMatchObject({ id: a!.id, label: 'fail' });
    await send('PATCH', t.auth, `/v1/datasets/${id}/items/${b!.id}`, { label: 'pass' });
    expect((await send('PATCH', other.auth, `/v1/datasets/${id}/items/${b!.id}`, { label: 'fail' })).statusCode).toBe(404);
    const ids = async (label: string) =>
      itemList.parse((await getJson(ctx.app, t, `/v1/datasets/${id}/items`, { label })).body).items.map((item) => item.id);
    expect(await ids('fail')).toEqual([a!.id]);
    expect(await ids('pass')).toEqual([b!.id]);
    expect(await ids('unlabeled')).toEqual([c!.id]);
    expect((await send('PATCH', t.auth, `/v1/datasets/${id}/items/${b!.id}`, { label: null })).json().label).toBeNull();
    expect(await ids('unlabeled')).toEqual([b!.id, c!.id]);
    expect((await send('DELETE', t.auth, `/v1/datasets/${id}/items/${c!.id}`)).statusCode).toBe(204);
    expect((await send('DELETE', t.auth, `/v1/datasets/${id}/items/${c!.id}`)).statusCode).toBe(404);
    expect(await ids('all')).toEqual([a!.id, b!.id]);
    const page = itemList.parse((await getJson(ctx.app, t, `/v1/datasets/${id}/items`, { limit: 1 })).body);
    expect([page.items.length, page.has_more]).toEqual([1, true]);
  });
});

describe('dataset export', () => {
  const exportOf = (tenant: TestTenant | { auth: Headers }, id: string, query = '') =>
    ctx.app.inject({ method: 'GET', url: `/v1/datasets/${id}/export${query}`, headers: tenant.auth });

  it('streams CSV by default and JSONL on request, in id order, exactly', async () => {
    const [trace] = await tracesWithOutputs(t, ['x']);
    const id = await newDataset(t);
    const items = await addItems(t, id, [
      { trace_id: trace!.traceId, label: 'pass' },
      { trace_id: trace!.traceId, span_id: trace!.spanId, label: 'fail' },
      { trace_id: trace!.traceId, expected: 'not exported' },
    ]);
    const [p, f, u] = items;
    const csv = await exportOf(t, id);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="dataset-${id}.csv"`);
    expect(csv.headers['x-service-truncated']).toBe('false');
    expect(csv.body).toBe(
      'id,trace_id,span_id,label,created_at\n' +
        `${p!.id},${trace!.traceId},,pass,${p!.created_at}\n` +
        `${f!.id},${trace!.traceId},${trace!.spanId},fail,${f!.created_at}\n` +
        `${u!.id},${trace!.traceId},,unlabeled,${u!.created_at}\n`,
    );
    const jsonl = await exportOf(t, id, '?format=jsonl');
    expect(jsonl.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(jsonl.body).toBe(
      items.map((item) => `{"id":"${item.id}","trace_id":"${item.trace_id}","span_id":${item.span_id ? `"${item.span_id}"` : 'null'},"label":${item.label ? `"${item.label}"` : 'null'},"created_at":"${item.created_at}"}\n`).join(''),
    );
    expect((await exportOf(t, id, '?label=unlabeled')).body).toBe(`id,trace_id,span_id,label,created_at\n${u!.id},${trace!.traceId},,unlabeled,${u!.created_at}\n`);
    expect((await exportOf(t, id, '?format=jsonl&label=pass')).body.trim().split('\n').map((l) => JSON.parse(l).id)).toEqual([p!.id]);
  });

  it('Parquet read back equals the CSV export: same rows and values, typed, filtered and capped alike', async () => {
    /** A Parquet value as the CSV export writes it: a null span_id empty, a null label `unlabeled`. */
    const parquetAsCsv = async (id: string, query: string, tenant: TestTenant = t) => {
      const res = await exportOf(tenant, id, `?format=parquet${query}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/vnd.apache.parquet');
      expect(res.headers['content-disposition']).toBe(`attachment; filename="dataset-${id}.parquet"`);
      const file = res.rawPayload.buffer.slice(res.rawPayload.byteOffset, res.rawPayload.byteOffset + res.rawPayload.length) as ArrayBuffer;
      expect(parquetMetadata(file).schema.slice(1).map((c) => c.name)).toEqual(['id', 'trace_id', 'span_id', 'label', 'created_at']);
      const rows = (await parquetReadObjects({ file })) as { id: string; trace_id: string; span_id: string | null; label: string | null; created_at: Date }[];
      for (const r of rows) expect(r.created_at).toBeInstanceOf(Date);
      const lines = rows.map((r) => `${r.id},${r.trace_id},${r.span_id ?? ''},${r.label ?? 'unlabeled'},${r.created_at.toISOString()}\n`);
      return { text: `id,trace_id,span_id,label,created_at\n${lines.join('')}`, rows, truncated: res.headers['x-service-truncated'] };
    };
    const [trace] = await tracesWithOutputs(t, ['x']);
    const id = await newDataset(t);
    await addItems(t, id, [
      { trace_id: trace!.traceId, label: 'pass' },
      { trace_id: trace!.traceId, span_id: trace!.spanId, label: 'fail' },
      { trace_id: trace!.traceId },
    ]);
    for (const query of ['', '&label=pass', '&label=unlabeled']) {
      expect((await parquetAsCsv(id, query)).text).toBe((await exportOf(t, id, query.replace('&', '?'))).body);
    }
    const { rows } = await parquetAsCsv(id, '');
    expect(rows.filter((r) => r.span_id === null && r.label === null)).toHaveLength(1);
    // An empty dataset is a valid file of no rows; another tenant's dataset is a 404.
    expect((await parquetAsCsv(await newDataset(t), '')).rows).toEqual([]);
    expect((await exportOf(other, id, '?format=parquet')).statusCode).toBe(404);
    // The plan's cap applies as to CSV.
    const starter = await createTenant(ctx.app, 'starter');
    const [theirs] = await tracesWithOutputs(starter, ['x']);
    const capped = await newDataset(starter);
    await addItems(starter, capped, Array.from({ length: 150 }, () => ({ trace_id: theirs!.traceId })));
    const parquet = await parquetAsCsv(capped, '', starter);
    expect([parquet.rows.length, parquet.truncated]).toEqual([100, 'true']);
    expect(parquet.text).toBe((await exportOf(starter, capped)).body);
  });

  it('is readable by a query-scoped key and a viewer, and a 404 for another tenant', async () => {
    const id = await newDataset(t);
    const key = await send('POST', t.auth, '/v1/apikeys', { name: 'reader', scopes: ['query'] });
    expect((await exportOf({ auth: bearer(key.json().secret) }, id)).statusCode).toBe(200);
    expect((await exportOf({ auth: bearer(await sessionToken(t.tenantId, 'viewer')) }, id)).statusCode).toBe(200);
    expect((await exportOf(other, id)).statusCode).toBe(404);
    expect((await exportOf(t, id, '?format=xml')).statusCode).toBe(400);
  });

  it("caps the rows at the plan's limit and says so in X-Service-Truncated", async () => {
    const rowsOf = (body: string) => body.trim().split('\n').length - 1;
    for (const [plan, count, rows, truncated] of [
      ['starter', 150, 100, 'true'],
      ['starter', 100, 100, 'false'],
      ['pro', 150, 150, 'false'],
    ] as const) {
      const tenant = await createTenant(ctx.app, plan);
      const [trace] = await tracesWithOutputs(tenant, ['x']);
      const id = await newDataset(tenant);
      await addItems(tenant, id, Array.from({ length: count }, () => ({ trace_id: trace!.traceId })));
      const res = await exportOf(tenant, id);
      expect([plan, count, rowsOf(res.body), res.headers['x-service-truncated']]).toEqual([plan, count, rows, truncated]);
    }
  });

  it('streams from an open cursor at the pace of the client, and ends its transaction when the client goes away', async () => {
    const tenant = await createTenant(ctx.app, 'enterprise');
    const id = await newDataset(tenant);
    await ctx.stores.sql`
      insert into dataset_items (id, tenant_id, dataset_id, trace_id, project_id)
      select gen_random_uuid(), ${tenant.tenantId}, ${id}, gen_random_uuid(), ${tenant.projectId} from generate_series(1, 200000)`;
    const openExports = async () => {
      const [row] = await ctx.stores.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle' and query like '%from dataset_items%'`;
      return row!.n;
    };
    // The stream the export writes into, as the route got it.
    const opened = vi.spyOn(ctx.app.services.datasets, 'export');
    const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const aborted = new AbortController();
    try {
      const res = await fetch(`${address}/v1/datasets/${id}/export`, { headers: tenant.auth, signal: aborted.signal });
      expect([res.status, res.headers.get('x-service-truncated')]).toEqual([200, 'false']);
      expect((await res.body!.getReader().read()).value!.length).toBeGreaterThan(0);
      const body = (await opened.mock.results[0]!.value as DatasetExport).body as PassThrough;
      // Not reading: the export fills what the connection buffers, then stops and waits for the
      // client to take more ('drain', which only reading brings), its cursor and transaction open.
      // An export that ignored the client would never wait for 'drain': it would push all 200,000
      // rows into memory and end its transaction.
      const parked = await pollUntil(
        async () => ({ awaitingDrain: body.writableNeedDrain && body.listenerCount('drain') > 0, ended: body.writableEnded, open: await openExports() }),
        (state) => state.awaitingDrain,
      );
      expect(parked).toEqual({ awaitingDrain: true, ended: false, open: 1 });
    } finally {
      aborted.abort();
      opened.mockRestore();
    }
    expect(await pollUntil(openExports, (n) => n === 0)).toBe(0);
  });
});

describe('dataset runs', () => {
  async function versionOf(tenant: TestTenant): Promise<string> {
    const res = await send('POST', tenant.auth, '/v1/eval-rules', {
      name: 'says ok',
      metric_name: 'ok',
      config: { provider: 'builtin', preset: 'contains', params: { value: 'ok' } },
      sampling_rate: 0,
      enabled: false,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().current_version_id;
  }

  const runOf = async (tenant: TestTenant, id: string, runId: string, query = {}) =>
    runDetail.parse((await getJson(ctx.app, tenant, `/v1/datasets/${id}/runs/${runId}`, query)).body);

  it('scores the items the dataset had when the run was created, with exact counts and paged results', async () => {
    const versionId = await versionOf(t);
    const outputs = ['ok 1', 'no', 'ok 2', 'nope', 'ok 3'];
    const traces = await tracesWithOutputs(t, outputs);
    const id = await newDataset(t);
    const items = await addItems(t, id, [
      ...traces.map((trace) => ({ trace_id: trace.traceId })),
      { trace_id: traces[1]!.traceId, span_id: traces[1]!.spanId },
      { trace_id: traces[0]!.traceId, span_id: randomUUID() },
    ]);
    const res = await send('POST', t.auth, `/v1/datasets/${id}/runs`, { eval_version_id: versionId });
    expect(res.statusCode, res.body).toBe(201);
    const created = evalRun.parse(res.json());
    expect(created).toMatchObject({ status: 'pending', item_count: 7, completed_count: 0, pass_rate: null, dataset_id: id });
    await addItems(t, id, [{ trace_id: traces[0]!.traceId }]);

    const done = await pollUntil(() => runOf(t, id, created.id), (run) => run.status === 'completed');
    expect(done).toMatchObject({ item_count: 7, completed_count: 7, pass_count: 3, fail_count: 3, error_count: 1, pass_rate: 0.5 });
    expect(done.started_at).not.toBeNull();
    expect(done.completed_at).not.toBeNull();
    const results = [];
    let cursor: string | undefined;
    do {
      const page = await runOf(t, id, created.id, { results_limit: 3, results_cursor: cursor });
      results.push(...page.results);
      cursor = page.results_next_cursor ?? undefined;
    } while (cursor);
    expect(results.map((r) => r.item_id)).toEqual(items.map((item) => item.id));
    expect(results.map((r) => (r.error ? 'error' : r.passed))).toEqual([true, false, true, false, true, false, 'error']);
    expect(results[5]).toMatchObject({ trace_id: traces[1]!.traceId, span_id: traces[1]!.spanId, score: 0 });

    const listed = runList.parse((await getJson(ctx.app, t, `/v1/datasets/${id}/runs`)).body);
    expect(listed.runs.map((run) => run.id)).toEqual([created.id]);
    expect((await getJson(ctx.app, other, `/v1/datasets/${id}/runs/${created.id}`)).status).toBe(404);
  });

  it('completes a run of an empty dataset with no items', async () => {
    const id = await newDataset(t);
    const res = await send('POST', t.auth, `/v1/datasets/${id}/runs`, { eval_version_id: await versionOf(t) });
    expect(evalRun.parse(res.json())).toMatchObject({ status: 'pending', item_count: 0 });
    const done = await pollUntil(() => runOf(t, id, res.json().id), (run) => run.status === 'completed');
    expect(done).toMatchObject({ completed_count: 0, pass_rate: null, results: [] });
  });

  it('refuses an unknown or foreign version (404) and a run beyond the eval quota (402), creating nothing', async () => {
    const tenant = await createTenant(ctx.app, 'starter');
    const [trace] = await tracesWithOutputs(tenant, ['ok']);
    const id = await newDataset(tenant);
    await addItems(tenant, id, [{ trace_id: trace!.traceId }]);
    const url = `/v1/datasets/${id}/runs`;
    expect((await send('POST', tenant.auth, url, { eval_version_id: randomUUID() })).statusCode).toBe(404);
    expect((await send('POST', tenant.auth, url, { eval_version_id: await versionOf(other) })).statusCode).toBe(404);
    await ctx.app.services.evals.reserveQuota(tenant.tenantId, 2_500);
    const refused = await send('POST', tenant.auth, url, { eval_version_id: await versionOf(tenant) });
    expect([refused.statusCode, refused.json().code]).toEqual([402, 'eval_quota_exceeded']);
    expect(runList.parse((await getJson(ctx.app, tenant, url)).body).runs).toEqual([]);
  });
});
