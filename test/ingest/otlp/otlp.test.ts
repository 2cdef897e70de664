import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spanUuid, traceUuid } from '../../../src/platform/otel-ids.js';
import { aTrace } from '../../builders/traces.js';
import { anOtlpRequest, anOtlpSpan, decodeProtobufResponse, gzip, ns, otelSpanId, otelTraceId, toProtobuf } from '../../builders/otlp.js';
import { createTenant, type TestContext, type TestTenant } from '../../helpers/app.js';
import { storedSpans } from '../../helpers/stored-spans.js';
import { startAppWithWorkers } from '../../helpers/workers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers();
});
afterAll(async () => ctx?.close());

const post = (t: TestTenant, payload: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({
    method: 'POST',
    url: '/v1/otlp/traces',
    headers: { ...t.auth, 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
  });

const postProtobuf = (t: TestTenant, body: Buffer, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: { ...t.auth, 'content-type': 'application/x-protobuf', ...headers }, payload: body });

const spansOf = (t: TestTenant, traceId: string) => storedSpans(ctx.stores.ch, t.tenantId, traceId);

/** The trace's rows as readers see them (FINAL, tombstones skipped), or every stored row version. */
const traceRows = (t: TestTenant, traceId: string, readers = true) =>
  ctx.stores.ch.rows<Record<string, unknown>>(
    'test',
    `SELECT * FROM traces ${readers ? 'FINAL' : ''} WHERE tenant_id = {t:UUID} AND id = {id:UUID} ${readers ? 'AND is_deleted = 0' : ''}`,
    { t: t.tenantId, id: traceId },
  );

/** The trace's one row, which the request that carried its spans wrote before it was answered. */
async function rolledUp(t: TestTenant, traceId: string, spanCount: number) {
  const rows = await traceRows(t, traceId);
  expect(rows, `trace row with ${spanCount} spans`).toHaveLength(1);
  expect(rows[0]!.span_count).toBe(spanCount);
  return rows[0]!;
}

describe('POST /v1/otlp/traces (JSON)', () => {
  it('maps ids and GenAI attributes onto spans and rolls the trace up', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    const llmId = otelSpanId();
    const root = anOtlpSpan({
      traceId,
      spanId: rootId,
      name: 'answer question',
      kind: 'SPAN_KIND_SERVER',
      startTimeUnixNano: ns(0),
      endTimeUnixNano: ns(1_200_000_123),
      attributes: { 'openinference.span.kind': 'CHAIN', 'input.value': 'capital of France?', 'output.value': 'Paris', 'session.id': 'sess-1', 'tag.tags': ['env:prod', 'beta'] },
    });
    const llm = anOtlpSpan({
      traceId,
      spanId: llmId,
      parentSpanId: rootId,
      startTimeUnixNano: ns(100_000_001),
      endTimeUnixNano: ns(600_000_002),
      attributes: {
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
        'gen_ai.usage.input_tokens': 1_000_000,
        'gen_ai.usage.output_tokens': '1000000',
        'gen_ai.prompt.0.role': 'user',
        'gen_ai.prompt.0.content': 'capital of France?',
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': 'Paris',
        'http.response.status_code': 200,
        'custom.flag': true,
      },
    });
    const res = await post(t, anOtlpRequest([llm, root]));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.json()).toEqual({});

    const traceUuidValue = traceUuid(traceId);
    const spans = await spansOf(t, traceUuidValue);
    expect(spans).toHaveLength(2);
    const [r, l] = spans;
    expect(r).toMatchObject({
      span_id: spanUuid(rootId),
      parent_span_id: null,
      project_id: t.projectId,
      type: 'chain',
      input: 'capital of France?',
      output: 'Paris',
      start_ns: ns(0),
      end_ns: ns(1_200_000_123),
      otel_trace_id: traceId,
      otel_span_id: rootId,
    });
    expect(JSON.parse(r!.metadata)).toEqual({
      'session.id': 'sess-1',
      'tag.tags': ['env:prod', 'beta'],
      'otel.resource': { 'service.name': 'checkout' },
      'otel.scope': { name: 'test-instrumentation', version: '1.2.3' },
      'otel.span_kind': 'server',
    });
    expect(l).toMatchObject({
      span_id: spanUuid(llmId),
      parent_span_id: spanUuid(rootId),
      type: 'llm',
      model: 'gpt-4o-mini-2024-07-18',
      prompt_tokens: 1_000_000,
      completion_tokens: 1_000_000,
      input: JSON.stringify([{ role: 'user', content: 'capital of France?' }]),
      output: 'Paris',
      status_code: 200,
      latency_ms: 500,
      error: null,
    });
    expect(l!.cost).toBeCloseTo(0.15 + 0.6); // price book: gpt-4o-mini per 1M tokens
    const lMeta = JSON.parse(l!.metadata);
    expect(lMeta).toMatchObject({ 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'custom.flag': true });
    expect(lMeta).not.toHaveProperty('gen_ai.response.model');

    const trace = await rolledUp(t, traceUuidValue, 2);
    expect(trace).toMatchObject({
      project_id: t.projectId,
      name: 'answer question',
      input: 'capital of France?',
      output: 'Paris',
      session_id: 'sess-1',
      tags: ['env:prod', 'beta'],
      model: 'gpt-4o-mini-2024-07-18',
      latency_ms: 1200,
      total_token_count: 2_000_000,
      started_at: '2026-11-01 12:00:00.000',
    });
    expect(trace.tag_pairs).toEqual(['env\u001fprod']);
    const [registry] = await ctx.stores.sql<{ source: string; started_at: Date }[]>`
      select source, started_at from trace_registry where tenant_id = ${t.tenantId} and trace_id = ${traceUuidValue}`;
    expect(registry).toEqual({ source: 'otlp', started_at: new Date('2026-11-01T12:00:00.000Z') });
  });

  it('accepts gzip, numbers for times, and answers partialSuccess for rejected spans', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    const good = anOtlpSpan({ traceId, startTimeUnixNano: Number(ns(0)), endTimeUnixNano: ns(1_000) });
    const badIds = anOtlpSpan({ traceId: 'zz', spanId: otelSpanId() });
    const zeroTrace = anOtlpSpan({ traceId: '0'.repeat(32) });
    const backwards = anOtlpSpan({ traceId, startTimeUnixNano: ns(1_000), endTimeUnixNano: ns(0) });
    const res = await post(t, gzip(JSON.stringify(anOtlpRequest([good, badIds, zeroTrace, backwards]))), { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.partialSuccess.rejectedSpans).toBe('3');
    expect(body.partialSuccess.errorMessage).toContain('invalid trace id');
    expect(body.partialSuccess.errorMessage).toContain('end time is before start time');
    expect(await spansOf(t, traceUuid(traceId))).toHaveLength(1);
  });

  it('refuses malformed bodies, unknown encodings and media types', async () => {
    const t = await createTenant(ctx.app);
    expect((await post(t, '{"resourceSpans":')).statusCode).toBe(400);
    expect((await post(t, { resourceSpans: 'nope' })).statusCode).toBe(400);
    expect((await post(t, JSON.stringify(anOtlpRequest([])), { 'content-encoding': 'br' })).statusCode).toBe(415);
    expect((await post(t, 'not gzip', { 'content-encoding': 'gzip' })).statusCode).toBe(400);
    expect((await post(t, 'hello', { 'content-type': 'text/plain' })).statusCode).toBe(415);
    const badProto = await postProtobuf(t, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]));
    expect(badProto.statusCode).toBe(400);
    expect(badProto.json().code).toBe('bad_request');
  });

  it('answers 413 when the decompressed body exceeds the limit', async () => {
    const t = await createTenant(ctx.app);
    const limit = ctx.stores.config.bodyLimitBytes;
    const bomb = gzip(Buffer.alloc(limit + 1, 0x20)); // a few KB on the wire
    expect(bomb.length).toBeLessThan(limit);
    const res = await post(t, bomb, { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('payload_too_large');
  });
});

describe('POST /v1/otlp/traces (protobuf)', () => {
  it('decodes raw id bytes and fixed64 times exactly and answers in protobuf', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    const spanId = otelSpanId();
    const span = anOtlpSpan({ traceId, spanId, startTimeUnixNano: ns(123_456_789), endTimeUnixNano: ns(987_654_321) });
    const res = await postProtobuf(t, gzip(toProtobuf(anOtlpRequest([span]))), { 'content-encoding': 'gzip' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-protobuf');
    expect(decodeProtobufResponse(res.rawPayload)).toEqual({});
    const [stored] = await spansOf(t, traceUuid(traceId));
    expect(stored).toMatchObject({ span_id: spanUuid(spanId), start_ns: ns(123_456_789), end_ns: ns(987_654_321), model: 'gpt-4o-mini', prompt_tokens: 12 });
  });

  it('reports rejected spans in a protobuf partialSuccess', async () => {
    const t = await createTenant(ctx.app);
    const ok = anOtlpSpan();
    const noName = anOtlpSpan({ name: '' });
    const res = await postProtobuf(t, toProtobuf(anOtlpRequest([ok, noName])));
    expect(res.statusCode).toBe(200);
    const decoded = decodeProtobufResponse(res.rawPayload);
    expect(decoded.partialSuccess?.rejectedSpans).toBe(1);
    expect(decoded.partialSuccess?.errorMessage).toContain('span name is empty');
  });
});

describe('merging spans of one trace', () => {
  it('merges spans sent in concurrent requests in random order into one trace row', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    const spans = [anOtlpSpan({ traceId, spanId: rootId, name: 'agent run', startTimeUnixNano: ns(0), endTimeUnixNano: ns(2_000_000_000), attributes: { 'traceloop.span.kind': 'workflow', 'traceloop.entity.input': '{"q":1}' } })];
    for (let i = 1; i <= 5; i++) {
      spans.push(anOtlpSpan({ traceId, parentSpanId: rootId, name: `step ${i}`, startTimeUnixNano: ns(i * 100_000_000), endTimeUnixNano: ns(i * 100_000_000 + 50_000_000) }));
    }
    const shuffled = [...spans].sort(() => Math.random() - 0.5);
    const responses = await Promise.all(shuffled.map((s, i) => (i % 2 ? post(t, anOtlpRequest([s])) : postProtobuf(t, toProtobuf(anOtlpRequest([s]))))));
    expect(responses.map((r) => r.statusCode), responses.map((r) => r.body).join('\n')).toEqual(responses.map(() => 200));
    // A retry of an already stored span collapses onto the same row.
    expect((await post(t, anOtlpRequest([spans[3]!]))).statusCode).toBe(200);

    const trace = await rolledUp(t, traceUuid(traceId), 6);
    expect(trace).toMatchObject({ name: 'agent run', input: '{"q":1}', latency_ms: 2000, prompt_tokens_total: 60, completion_tokens_total: 15, model: 'gpt-4o-mini' });
    expect(await spansOf(t, traceUuid(traceId))).toHaveLength(6);
    const [usage] = await ctx.stores.sql<{ traces: number }[]>`select traces from trace_usage where tenant_id = ${t.tenantId}`;
    expect(usage!.traces).toBe(1); // one trace counted, however many requests carried it
  });

  it('updates the row of a trace whose spans keep arriving on every request', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    for (let i = 0; i < 5; i++) {
      const span = anOtlpSpan({ traceId, name: `tick ${i}`, startTimeUnixNano: ns(i * 1_000_000), endTimeUnixNano: ns(i * 1_000_000 + 500_000) });
      expect((await post(t, anOtlpRequest([span]))).statusCode).toBe(200);
      const row = await rolledUp(t, traceUuid(traceId), i + 1);
      expect(row).toMatchObject({ name: 'tick 0', prompt_tokens_total: 12 * (i + 1), completion_tokens_total: 3 * (i + 1) });
    }
  });

  it('moves the trace row when an earlier root arrives last, leaving one row and a tombstone under the old key', async () => {
    const t = await createTenant(ctx.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    const children = [1, 2].map((i) =>
      anOtlpSpan({ traceId, parentSpanId: rootId, name: `child ${i}`, startTimeUnixNano: ns(i * 1_000_000_000), endTimeUnixNano: ns(i * 1_000_000_000 + 500_000_000) }),
    );
    expect((await post(t, anOtlpRequest(children))).statusCode).toBe(200);
    const first = await rolledUp(t, traceUuid(traceId), 2);
    expect(first).toMatchObject({ name: 'child 1', started_at: '2026-11-01 12:00:01.000', latency_ms: 1500 });

    const root = anOtlpSpan({ traceId, spanId: rootId, name: 'root', startTimeUnixNano: ns(0), endTimeUnixNano: ns(3_000_000_000), attributes: {} });
    expect((await post(t, anOtlpRequest([root]))).statusCode).toBe(200);
    const moved = await rolledUp(t, traceUuid(traceId), 3);
    expect(moved).toMatchObject({ name: 'root', started_at: '2026-11-01 12:00:00.000', latency_ms: 3000 });
    const stored = await traceRows(t, traceUuid(traceId), false);
    expect(stored.map((r) => [r.started_at, r.is_deleted]).sort()).toEqual([
      ['2026-11-01 12:00:00.000', 0],
      ['2026-11-01 12:00:01.000', 0],
      ['2026-11-01 12:00:01.000', 1],
    ]);
    const [registry] = await ctx.stores.sql<{ started_at: Date }[]>`
      select started_at from trace_registry where tenant_id = ${t.tenantId} and trace_id = ${traceUuid(traceId)}`;
    expect(registry!.started_at).toEqual(new Date('2026-11-01T12:00:00.000Z'));
  });

  it('rejects OTLP spans for a natively ingested trace id', async () => {
    const t = await createTenant(ctx.app);
    const native = aTrace();
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: native })).statusCode).toBe(201);
    const res = await post(t, anOtlpRequest([anOtlpSpan({ traceId: native.id.replaceAll('-', '') })]));
    expect(res.statusCode).toBe(200);
    expect(res.json().partialSuccess).toMatchObject({ rejectedSpans: '1' });
    expect(res.json().partialSuccess.errorMessage).toContain('/v1/ingest');
  });
});

describe('access and quota', () => {
  it('refuses an archived project with 403 error.project.archived', async () => {
    const t = await createTenant(ctx.app);
    await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'other' } });
    await ctx.app.inject({ method: 'POST', url: `/v1/projects/${t.projectId}/archive`, headers: t.auth });
    const res = await post(t, anOtlpRequest([anOtlpSpan()]));
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('error.project.archived');
  });

  it('counts new traces against the monthly quota: partial past it, 402 when nothing fits', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const month = new Date().toISOString().slice(0, 7) + '-01';
    await ctx.stores.sql`insert into trace_usage (tenant_id, month, traces) values (${t.tenantId}, ${month}, 49999)`;
    const fits = anOtlpSpan();
    const res = await post(t, anOtlpRequest([fits, anOtlpSpan()]));
    expect(res.statusCode).toBe(200);
    expect(res.json().partialSuccess.rejectedSpans).toBe('1');
    expect(res.json().partialSuccess.errorMessage).toContain('quota');

    const full = await post(t, anOtlpRequest([anOtlpSpan()]));
    expect(full.statusCode).toBe(402);
    expect(full.json().code).toBe('trace_quota_exceeded');
    // Spans of a trace already counted still merge past the quota.
    expect((await post(t, anOtlpRequest([anOtlpSpan({ traceId: fits.traceId })]))).json()).toEqual({});
  });

  it('refuses a query-scoped key', async () => {
    const t = await createTenant(ctx.app);
    const key = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'read', scopes: ['query'] } });
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { authorization: `Bearer ${key.json().secret}`, 'content-type': 'application/json' },
      payload: JSON.stringify(anOtlpRequest([anOtlpSpan()])),
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('scope_forbidden');
  });
});
