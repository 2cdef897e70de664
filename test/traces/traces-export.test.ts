import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TraceExportService } from '../../src/modules/traces/export-service.js';
import { traceExportRepository, type TraceExportRepository } from '../../src/modules/traces/export-repo.js';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { registerErrorHandling } from '../../src/platform/http-errors.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, withQuery, type QueryValues } from '../helpers/trace-api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const COLUMNS = [
  'trace_id', 'span_id', 'name', 'type', 'model', 'created_at', 'duration_ms', 'prompt_tokens', 'completion_tokens',
  'cost_usd', 'trace_input', 'trace_output', 'span_input', 'span_output', 'error',
];

/** The export's trace order is ClickHouse's order of UUIDs; the engine itself is the oracle. */
async function idOrder(tenantId: string): Promise<string[]> {
  const rows = await ctx.stores.ch.rows<{ id: string }>('test', 'SELECT id FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 ORDER BY id', { t: tenantId });
  return rows.map((r) => r.id);
}

const at = (iso: string, plusMs = 0) => new Date(Date.parse(iso) + plusMs).toISOString();

/** RFC 4180 parser (quoted fields, doubled quotes, newlines inside quotes) — the test's own oracle. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += c;
  }
  expect(quoted, 'unterminated quoted field').toBe(false);
  expect(field === '' && record.length === 0, 'last record ends with a newline').toBe(true);
  return records;
}

async function exportOf(t: TestTenant, query: QueryValues) {
  const res = await ctx.app.inject({ method: 'GET', url: withQuery('/v1/traces/export', query), headers: t.auth });
  return { status: res.statusCode, headers: res.headers, text: res.body };
}

/** A Parquet export read back by an independent reader (hyparquet): its column names and rows. */
async function readParquet(file: Buffer) {
  const buffer = file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer;
  const columns = parquetMetadata(buffer).schema.slice(1).map((c) => c.name);
  return { columns, rows: (await parquetReadObjects({ file: buffer })) as Record<string, unknown>[] };
}

/** A Parquet value as the CSV export writes it: null is an empty field, timestamps ISO 8601 in UTC. */
const asCsvField = (v: unknown) => (v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : String(v));

async function parquetRows(t: TestTenant, query: QueryValues = {}) {
  const res = await ctx.app.inject({ method: 'GET', url: withQuery('/v1/traces/export', { ...query, format: 'parquet' }), headers: t.auth });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('application/vnd.apache.parquet');
  expect(res.headers['content-disposition']).toBe('attachment; filename="traces.parquet"');
  const { columns, rows } = await readParquet(res.rawPayload);
  expect(columns).toEqual(COLUMNS);
  return rows;
}

async function csvRows(t: TestTenant, query: QueryValues = {}) {
  const res = await exportOf(t, { format: 'csv', ...query });
  expect(res.status, res.text).toBe(200);
  const [header, ...rows] = parseCsv(res.text);
  expect(header).toEqual(COLUMNS);
  return rows.map((r) => Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]])) as Record<string, string>);
}

describe('GET /v1/traces/export', () => {
  let t: TestTenant;
  const start = '2026-02-02T10:00:00.000Z';
  const tricky = 'said "hi", then\nleft, "quoted"\r\nline';
  const older = aTrace({
    name: 'older',
    input: tricky,
    output: 'plain, with comma',
    tags: ['env:prod'],
    spans: [
      aSpan({ name: 'b-second', start_time: at(start, 300), end_time: at(start, 450), input: 'x,y', error: 'rate limit "exceeded", retry', status_code: 429, cost: 0.125 }),
      aSpan({ name: 'a-first', type: 'retrieval', model: null, start_time: start, end_time: at(start, 250), prompt_tokens: 0, completion_tokens: 0, output: 'multi\nline' }),
    ],
  });
  const newer = aTrace({
    name: 'newer',
    spans: [aSpan({ name: 'only', start_time: at(start, 60_000), end_time: at(start, 61_000), cost: 0.5 })],
  });

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [older, newer]);
  });

  it('streams CSV: exactly the spec header, one row per span, traces in id order, spans by start time', async () => {
    const res = await exportOf(t, {});
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="traces.csv"');
    expect(res.text.split('\n', 1)[0]).toBe(COLUMNS.join(','));
    const rows = await csvRows(t);
    const spansOf: Record<string, string[]> = { [newer.id]: ['only'], [older.id]: ['a-first', 'b-second'] };
    const expected = (await idOrder(t.tenantId)).flatMap((id) => spansOf[id]!.map((name) => [id, name]));
    expect(rows.map((r) => [r.trace_id, r.name])).toEqual(expected);
  });

  it('quotes commas, quotes and newlines so every value round-trips', async () => {
    const rows = await csvRows(t);
    const first = rows.find((r) => r.name === 'a-first')!;
    const second = rows.find((r) => r.name === 'b-second')!;
    expect(first.trace_input).toBe(tricky);
    expect(first.trace_output).toBe('plain, with comma');
    expect(first.span_output).toBe('multi\nline');
    expect(first.error).toBe('');
    expect(first.model).toBe('');
    expect(first.type).toBe('retrieval');
    expect(second.span_input).toBe('x,y');
    expect(second.error).toBe('rate limit "exceeded", retry');
    expect(second).toMatchObject({ duration_ms: '150', prompt_tokens: '12', completion_tokens: '3', cost_usd: '0.125', model: 'gpt-4o-mini' });
  });

  it("uses the span's created_at (ingest time) in ISO 8601, as GET /v1/traces/{id} shows it", async () => {
    const detail = await getJson(ctx.app, t, `/v1/traces/${older.id}`);
    const rows = await csvRows(t);
    for (const span of detail.body.spans) {
      const row = rows.find((r) => r.span_id === span.id)!;
      expect(row.created_at).toBe(span.created_at);
      expect(row.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
  });

  it('streams JSONL with the spec keys in order, numbers as numbers, error null when none', async () => {
    const res = await exportOf(t, { format: 'jsonl' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="traces.jsonl"');
    expect(res.text.endsWith('\n')).toBe(true);
    const lines = res.text.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(Object.keys(line)).toEqual(COLUMNS);
    const first = lines.find((l) => l.name === 'a-first');
    const second = lines.find((l) => l.name === 'b-second');
    expect(first).toMatchObject({ trace_id: older.id, error: null, trace_input: tricky, span_output: 'multi\nline', duration_ms: 250, prompt_tokens: 0 });
    expect(second).toMatchObject({ error: 'rate limit "exceeded", retry', cost_usd: 0.125, duration_ms: 150, completion_tokens: 3 });
  });

  it('applies the listing filters and validates them like the listing', async () => {
    expect((await csvRows(t, { name: 'newer' })).map((r) => r.trace_id)).toEqual([newer.id]);
    expect((await csvRows(t, { failure_type: 'rate_limit' })).map((r) => r.name)).toEqual(['a-first', 'b-second']);
    expect((await csvRows(t, { tag_key: 'env', tag_value: 'prod' })).map((r) => r.trace_id)).toEqual([older.id, older.id]);
    expect(await csvRows(t, { tag_key: 'env', tag_value: 'dev' })).toEqual([]);
    expect((await csvRows(t, { from: at(start, 60_000) })).map((r) => r.name)).toEqual(['only']);
    const incomplete = await exportOf(t, { tag_key: 'env' });
    expect(incomplete.status).toBe(400);
    expect(JSON.parse(incomplete.text).code).toBe('error.tags_filter_incomplete');
    const backwards = await exportOf(t, { latency_min: 5, latency_max: 1 });
    expect(backwards.status).toBe(400);
    expect(JSON.parse(backwards.text).error).toContain('query.latency_max');
    expect((await exportOf(t, { format: 'xml' })).status).toBe(400);
  });

  it('caps the rows at limit', async () => {
    const all = (await csvRows(t)).map((r) => r.span_id);
    expect((await csvRows(t, { limit: 2 })).map((r) => r.span_id)).toEqual(all.slice(0, 2));
    const jsonl = await exportOf(t, { format: 'jsonl', limit: 1 });
    expect(jsonl.text.trimEnd().split('\n')).toHaveLength(1);
  });

  it('exports only the header for a tenant without traces, and never another tenant’s rows', async () => {
    const empty = await createTenant(ctx.app);
    const res = await exportOf(empty, {});
    expect(res.text).toBe(`${COLUMNS.join(',')}\n`);
    expect((await exportOf(empty, { format: 'jsonl' })).text).toBe('');
    expect(await parquetRows(empty)).toEqual([]);
  });

  it('Parquet read back equals the CSV export: same columns, rows and values, typed', async () => {
    const rows = await parquetRows(t);
    expect(rows.map((r) => Object.fromEntries(COLUMNS.map((c) => [c, asCsvField(r[c])])))).toEqual(await csvRows(t));
    const first = rows.find((r) => r.name === 'a-first')!;
    const second = rows.find((r) => r.name === 'b-second')!;
    expect(first.created_at).toBeInstanceOf(Date);
    expect(first.error).toBeNull();
    expect(first.model).toBe(''); // as in JSONL: the stored model, empty when none
    expect(first.trace_input).toBe(tricky);
    expect(second.error).toBe('rate limit "exceeded", retry');
    expect(second.cost_usd).toBe(0.125);
    for (const c of ['duration_ms', 'prompt_tokens', 'completion_tokens'] as const) expect(['number', 'bigint']).toContain(typeof second[c]);
    expect(Number(second.duration_ms)).toBe(150);
  });

  it('Parquet applies the filters and limit as the CSV export does, and holds only the tenant’s rows', async () => {
    const asCsv = (rows: Record<string, unknown>[]) => rows.map((r) => Object.fromEntries(COLUMNS.map((c) => [c, asCsvField(r[c])])));
    for (const query of [{ name: 'newer' }, { failure_type: 'rate_limit' }, { tag_key: 'env', tag_value: 'dev' }, { from: at(start, 60_000) }, { limit: 2 }]) {
      expect(asCsv(await parquetRows(t, query))).toEqual(await csvRows(t, query));
    }
    const other = await createTenant(ctx.app);
    const theirs = aTrace({ name: 'other tenant' });
    await ingestTraces(ctx.app, other, [theirs]);
    expect(new Set((await parquetRows(t)).map((r) => r.trace_id))).toEqual(new Set([older.id, newer.id]));
    expect(new Set((await parquetRows(other)).map((r) => r.trace_id))).toEqual(new Set([theirs.id]));
  });
});

describe('export paging', () => {
  it('crosses page boundaries without losing, repeating or reordering rows, and honours limit across pages', async () => {
    const t = await createTenant(ctx.app);
    const base = '2026-01-15T00:00:00.000Z';
    const traces = Array.from({ length: 9 }, (_, i) =>
      aTrace({
        // Three traces share each start time: ties across page boundaries.
        spans: Array.from({ length: 1 + (i % 3) }, (_, j) => aSpan({ name: `s${j}`, start_time: at(base, Math.floor(i / 3) * 1_000 + j), end_time: at(base, Math.floor(i / 3) * 1_000 + j + 5) })),
      }),
    );
    await ingestTraces(ctx.app, t, traces);
    const expected = (await idOrder(t.tenantId)).flatMap((id) => traces.find((x) => x.id === id)!.spans.map((s) => [id, s.name]));

    const service = (exportRepo: TraceExportRepository = traceExportRepository(ctx.stores.ch)) =>
      new TraceExportService(traceRepository(ctx.stores.ch), exportRepo, { keyBatch: 4, pageTraces: 2, pageSpans: 3 });
    const read = async (limit?: number) => {
      const body = await service().open(t.tenantId, {}, 'jsonl', limit);
      let text = '';
      for await (const chunk of body) text += chunk;
      return text.trimEnd().split('\n').map((l) => JSON.parse(l) as { trace_id: string; name: string });
    };
    expect((await read()).map((r) => [r.trace_id, r.name])).toEqual(expected);
    expect((await read(7)).map((r) => [r.trace_id, r.name])).toEqual(expected.slice(0, 7));

    // Parquet: every page is a file of its own from ClickHouse, joined into one file.
    const readParquetExport = async (limit?: number) => {
      const body = await service().open(t.tenantId, {}, 'parquet', limit);
      const parts: Buffer[] = [];
      for await (const chunk of body) parts.push(chunk as Buffer);
      return (await readParquet(Buffer.concat(parts))).rows.map((r) => [r.trace_id, r.name]);
    };
    expect(await readParquetExport()).toEqual(expected);
    expect(await readParquetExport(7)).toEqual(expected.slice(0, 7));
  });

  it('a failure after the first byte aborts the response instead of appending an error body', async () => {
    const t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [aTrace({ id: randomUUID() }), aTrace({ id: randomUUID() })]);
    const real = traceExportRepository(ctx.stores.ch);
    let pages = 0;
    // The real repository, failing on the second page as a lost ClickHouse connection would.
    const failingSecondPage: TraceExportRepository = {
      streamPage: (...args) => {
        pages += 1;
        if (pages === 2) {
          return (async function* () {
            yield* [];
            throw new Error('ClickHouse connection lost');
          })();
        }
        return real.streamPage(...args);
      },
    };
    const service = new TraceExportService(traceRepository(ctx.stores.ch), failingSecondPage, { keyBatch: 10, pageTraces: 1, pageSpans: 1 });
    const server = Fastify({ logger: false });
    registerErrorHandling(server);
    server.get('/export', async (_request, reply) => reply.type('text/csv').send(await service.open(t.tenantId, {}, 'csv', undefined)));
    await server.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = server.server.address() as AddressInfo;
      const request = http.get({ host: '127.0.0.1', port, path: '/export' });
      const [response] = (await once(request, 'response')) as [http.IncomingMessage];
      expect(response.statusCode).toBe(200);
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      const outcome = await new Promise<string>((resolve) => {
        response.on('end', () => resolve('complete'));
        response.on('aborted', () => resolve('aborted'));
        response.on('error', () => resolve('aborted'));
      });
      expect(outcome).toBe('aborted');
      expect(body.startsWith(`${COLUMNS.join(',')}\n`)).toBe(true);
      expect(body).not.toContain('"error"');
      expect(pages).toBe(2);
    } finally {
      await server.close();
    }
  });
});
