import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceDetailJson } from '../../src/modules/traces/detail-json.js';
import { span, traceDetail, type TraceDetail } from '../../src/modules/traces/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

/** What the route's zod serializer (fastify-type-provider-zod) answered before traceDetailJson. */
const schemaJson = (detail: unknown): string => JSON.stringify(traceDetail.encode(detail as TraceDetail));

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const at = (iso: string, plusMs = 0) => new Date(Date.parse(iso) + plusMs).toISOString();

describe('GET /v1/traces/{id} text', () => {
  it('is byte for byte what the schema serializer makes of the same detail, for varied spans', async () => {
    const t = await createTenant(ctx.app);
    const start = '2026-09-09T09:00:00.000Z';
    const rootId = randomUUID();
    const odd = 'quote " backslash \\ slash / tab \t newline \n ctrl \u0001 del \u007f sep \u2028 emoji 🙂 中文 Ελληνικά';
    const spans = [
      aSpan({ id: rootId, name: 'root', type: 'chain', model: null, start_time: start, end_time: at(start, 900), prompt_tokens: 0, completion_tokens: 0 }),
      aSpan({ parent_span_id: rootId, name: odd, input: odd, output: '', start_time: at(start, 10), end_time: at(start, 20), metadata: { '2': 'two', b: [1, { c: null }], a: 1.5, '1': true } }),
      aSpan({ parent_span_id: rootId, error: 'upstream request timed out after 30000 ms', failure_type: 'timeout', cost: 0.000123, start_time: at(start, 30), end_time: at(start, 31) }),
      ...Array.from({ length: 40 }, (_, i) =>
        aSpan({ parent_span_id: rootId, name: `step-${i}`, input: `input ${i} `.repeat(i), start_time: at(start, 100 + i), end_time: at(start, 200 + i), metadata: { i } }),
      ),
    ];
    const trace = aTrace({ spans, metadata: { user: 'u1', nested: { z: 1, a: [] } }, tags: ['x', 'y:z'], input: odd });
    await ingestTraces(ctx.app, t, [trace]);
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/traces/${trace.id}`, headers: t.auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    expect(body.spans).toHaveLength(spans.length);
    expect(body.spans[1].name).toBe(odd);
    expect(res.body).toBe(schemaJson(body));
    // Every span carries exactly the schema's keys in the schema's order.
    for (const s of body.spans) expect(Object.keys(s)).toEqual(Object.keys(span.shape));
    expect(Object.keys(body)).toEqual(Object.keys(traceDetail.shape));
  });

  it('drops an own __proto__ key of metadata as the schema does, and otherwise equals JSON.stringify', () => {
    const base = {
      id: randomUUID(), project_id: randomUUID(), error: null, tags: [], tag_map: {}, started_at: '2026-01-01T00:00:00.000Z',
      ended_at: '2026-01-01T00:00:01.000Z', session_id: '', external_id: '', name: 'n', input: '\ud800 lone', output: '', model: '',
      latency_ms: 1000, cost: 0, total_token_count: 0, prompt_tokens_total: 0, completion_tokens_total: 0,
      metadata: JSON.parse('{"__proto__": {"x": 1}, "k": "v", "deep": {"__proto__": 2}}') as Record<string, unknown>,
      span_count: 1, failure_types: [], otel_trace_id: null, control_loop_depth: 0,
    };
    const aStoredSpan = {
      id: randomUUID(), created_at: base.started_at, tenant_id: randomUUID(), trace_id: base.id, name: 's', type: 'llm', parent_span_id: null,
      input: 'i', output: 'o', model: 'm', latency_ms: 5, cost: -0, error: null, prompt_tokens: 1, completion_tokens: 2,
      metadata: JSON.parse('{"__proto__": 1, "a": 2}') as Record<string, unknown>, start_time: base.started_at, end_time: base.ended_at,
      otel_trace_id: '', otel_span_id: '', otel_parent_span_id: null, failure_type: null,
    };
    const detail: TraceDetail = { ...base, spans: [aStoredSpan, { ...aStoredSpan, metadata: {} }] };
    expect(traceDetailJson(detail)).toBe(schemaJson(detail));
    expect(traceDetailJson(detail)).not.toContain('"x":1');
    const plain: TraceDetail = { ...detail, metadata: { k: 'v' }, spans: [{ ...aStoredSpan, metadata: { a: 2 } }] };
    expect(traceDetailJson(plain)).toBe(JSON.stringify(plain));
    expect(traceDetailJson(plain)).toBe(schemaJson(plain));
    // No spans, and more spans than one streamed chunk holds (chunk boundaries).
    const none: TraceDetail = { ...plain, spans: [] };
    expect(traceDetailJson(none)).toBe(schemaJson(none));
    const many: TraceDetail = { ...plain, spans: Array.from({ length: 777 }, (_, i) => ({ ...aStoredSpan, id: randomUUID(), name: `s${i}`, metadata: i % 100 === 0 ? aStoredSpan.metadata : { i } })) };
    expect(traceDetailJson(many)).toBe(schemaJson(many));
  });
});
