import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spanHexOf, traceUuid } from '../../../src/platform/otel-ids.js';
import { tracesData, type TracesData } from '../../../src/modules/ingest/otlp/schemas.js';
import { aSpan, aTrace } from '../../builders/traces.js';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId } from '../../builders/otlp.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../../helpers/app.js';
import { storedSpans, type StoredSpan } from '../../helpers/stored-spans.js';
import { pollUntil, startAppWithWorkers } from '../../helpers/workers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers();
});
afterAll(async () => ctx?.close());

const WINDOW = 'from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z';

const spansOfTenant = (t: TestTenant) => storedSpans(ctx.stores.ch, t.tenantId);

const traceRowsOf = (t: TestTenant) =>
  ctx.stores.ch.rows<Record<string, unknown>>('test', 'SELECT * FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 ORDER BY id', { t: t.tenantId });

async function exportPage(t: TestTenant, query: string, role: 'owner' | 'member' | 'viewer' = 'owner') {
  return ctx.app.inject({ method: 'GET', url: `/v1/otlp/export?${query}`, headers: bearer(await sessionToken(t.tenantId, role)) });
}

/** The spans of a tenant keyed by OTel ids, with parent links as OTel ids: comparable across tenants. */
function comparable(rows: readonly StoredSpan[]) {
  return new Map(
    rows.map((r) => {
      // Ids and the project differ between the two tenants by construction; everything else must not.
      const { span_id, parent_span_id, trace_id, metadata, project_id: _p, otel_trace_id: _ot, otel_span_id: _os, ...fields } = r;
      const meta = JSON.parse(metadata) as Record<string, unknown>;
      for (const key of ['session.id', 'looptrace.tags', 'looptrace.tag_map']) delete meta[key]; // trace fields carried on roots
      return [
        `${trace_id}/${spanHexOf(span_id)}`,
        { ...fields, parent: parent_span_id ? spanHexOf(parent_span_id) : null, metadata: meta },
      ];
    }),
  );
}

async function seed(t: TestTenant) {
  const start = '2026-11-01T12:00:00.123456789Z';
  const native = aTrace({
    session_id: 'sess-native',
    tags: ['env:prod'],
    tag_map: { team: 'search' },
    spans: [],
  });
  const root = aSpan({ name: 'pipeline', type: 'chain', model: null, prompt_tokens: 0, completion_tokens: 0, input: 'q', output: 'a', start_time: start, end_time: '2026-11-01T12:00:02.000000001Z' });
  native.spans = [
    root,
    aSpan({
      parent_span_id: root.id,
      start_time: '2026-11-01T12:00:00.200000007Z',
      end_time: '2026-11-01T12:00:01.200000009Z',
      cost: 0.5,
      error: 'Request timed out after 30s',
      status_code: 504,
      metadata: { k: 'v', nested: { a: [1, 2], ok: true, ratio: 0.5 } },
    }),
    aSpan({ parent_span_id: root.id, name: 'lookup', type: 'tool', model: 'gpt-4o', cost: 0, start_time: '2026-11-01T12:00:01.3Z', end_time: '2026-11-01T12:00:01.4Z' }),
  ];
  expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: native })).statusCode).toBe(201);

  const traceId = otelTraceId();
  const rootId = otelSpanId();
  const otlp = anOtlpRequest([
    anOtlpSpan({ traceId, spanId: rootId, name: 'agent', kind: 2, startTimeUnixNano: ns(5_000_000_001), endTimeUnixNano: ns(9_000_000_003), attributes: { 'openinference.span.kind': 'AGENT', 'input.value': 'plan', 'session.id': 'sess-otlp', 'tag.tags': ['beta'] } }),
    anOtlpSpan({
      traceId,
      parentSpanId: rootId,
      startTimeUnixNano: ns(6_000_000_011),
      endTimeUnixNano: ns(7_000_000_013),
      attributes: { 'gen_ai.system': 'anthropic', 'gen_ai.request.model': 'claude-3-5-haiku', 'gen_ai.usage.input_tokens': 40, 'gen_ai.usage.output_tokens': 4 },
      events: [{ name: 'exception', timeUnixNano: ns(6_900_000_000), attributes: { 'exception.type': 'OverloadedError', 'exception.message': 'overloaded' } }],
      status: { code: 2, message: '' },
    }),
  ]);
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: { ...t.auth, 'content-type': 'application/json' }, payload: JSON.stringify(otlp) });
  expect(res.json()).toEqual({});
  await pollUntil(() => traceRowsOf(t), (rows) => rows.length === 2);
  return { native, otlpTraceId: traceUuid(traceId) };
}

describe('GET /v1/otlp/export', () => {
  it('is dashboard-only and readable by every role', async () => {
    const t = await createTenant(ctx.app);
    const byKey = await ctx.app.inject({ method: 'GET', url: `/v1/otlp/export?${WINDOW}`, headers: t.auth });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().code).toBe('session_required');
    expect((await exportPage(t, WINDOW, 'viewer')).statusCode).toBe(200);
    expect((await exportPage(t, 'from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z')).statusCode).toBe(400);
    expect((await exportPage(t, 'cursor=garbage')).json().code).toBe('invalid_cursor');
  });

  it('answers TracesData with hex ids and exact nanosecond strings', async () => {
    const t = await createTenant(ctx.app);
    const { native, otlpTraceId } = await seed(t);
    const res = await exportPage(t, WINDOW);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-next-cursor']).toBeUndefined();
    const data = tracesData.parse(res.json());
    const spans = data.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    expect(spans).toHaveLength(5);
    const nativeRoot = spans.find((s) => s.name === 'pipeline')!;
    expect(nativeRoot).toMatchObject({
      traceId: native.id.replaceAll('-', ''),
      spanId: native.spans[0]!.id.replaceAll('-', '').slice(16),
      parentSpanId: '',
      startTimeUnixNano: '1793534400123456789',
      endTimeUnixNano: '1793534402000000001',
    });
    expect(nativeRoot.attributes).toEqual(
      expect.arrayContaining([
        { key: 'looptrace.span.type', value: { stringValue: 'chain' } },
        { key: 'session.id', value: { stringValue: 'sess-native' } },
        { key: 'looptrace.tags', value: { arrayValue: { values: [{ stringValue: 'env:prod' }] } } },
      ]),
    );
    const otlpGroup = data.resourceSpans.find((r) => r.resource.attributes.some((a) => a.key === 'service.name'))!;
    expect(otlpGroup.scopeSpans[0]!.scope).toEqual({ name: 'test-instrumentation', version: '1.2.3' });
    expect(otlpGroup.scopeSpans[0]!.spans.every((s) => s.traceId === otlpTraceId.replaceAll('-', ''))).toBe(true);
  });

  it('pages with X-Next-Cursor, absent on the last page', async () => {
    const t = await createTenant(ctx.app);
    await seed(t);
    const seen: string[] = [];
    let query = `${WINDOW}&limit=2`;
    for (let page = 0; page < 10; page++) {
      const res = await exportPage(t, query);
      expect(res.statusCode).toBe(200);
      const spans = (res.json() as TracesData).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      expect(spans.length).toBeLessThanOrEqual(2);
      seen.push(...spans.map((s) => `${s.traceId}/${s.spanId}`));
      const next = res.headers['x-next-cursor'];
      if (!next) break;
      query = `cursor=${next}&limit=2`; // the cursor carries the window
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
  });

  it('round-trips: native and OTLP spans exported and re-ingested into another tenant read back the same', async () => {
    const a = await createTenant(ctx.app);
    const b = await createTenant(ctx.app);
    await seed(a);
    const exported = await exportPage(a, WINDOW);
    const reimport = await ctx.app.inject({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { ...b.auth, 'content-type': 'application/json' },
      payload: exported.body,
    });
    expect(reimport.statusCode).toBe(200);
    expect(reimport.json()).toEqual({});

    const original = comparable(await spansOfTenant(a));
    const copy = comparable(await spansOfTenant(b));
    expect([...copy.keys()].sort()).toEqual([...original.keys()].sort());
    for (const [key, span] of original) expect(copy.get(key), key).toEqual(span);

    // Trace-level fields derived from spans agree too (names come from the root span on OTLP).
    const rowsB = await pollUntil(() => traceRowsOf(b), (rows) => rows.length === 2);
    const rowsA = await traceRowsOf(a);
    const pick = (r: Record<string, unknown>) => ({
      id: r.id,
      started_at: r.started_at,
      latency_ms: r.latency_ms,
      cost: r.cost,
      total_token_count: r.total_token_count,
      span_count: r.span_count,
      session_id: r.session_id,
      tags: r.tags,
      tag_map: r.tag_map,
      error: r.error,
      failure_types: r.failure_types,
      model: r.model,
    });
    expect(rowsB.map(pick)).toEqual(rowsA.map(pick));
  });
});
