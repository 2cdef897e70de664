import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceDetail } from '../../src/modules/traces/schemas.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId, toProtobuf } from '../builders/otlp.js';
import { createTenant, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';

/**
 * GET /v1/traces/{id} by the OTel trace id (32 hex digits, as OTel logs print it) as well as by
 * the trace UUID, and the OTel hex ids on the trace detail and its spans.
 */
let ctx: TestContext;
let t: TestTenant;

beforeAll(async () => {
  ctx = await startAppWithWorkers();
  t = await createTenant(ctx.app);
});
afterAll(async () => ctx?.close());

const dashed = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

describe('an OTLP trace read by its OTel trace id', () => {
  const traceHex = otelTraceId();
  const rootHex = otelSpanId();
  const childHex = otelSpanId();

  beforeAll(async () => {
    const spans = [
      anOtlpSpan({ traceId: traceHex, spanId: rootHex, name: 'agent run', startTimeUnixNano: ns(0), endTimeUnixNano: ns(900_000_000) }),
      anOtlpSpan({ traceId: traceHex, spanId: childHex, parentSpanId: rootHex, name: 'llm call', startTimeUnixNano: ns(100_000_000), endTimeUnixNano: ns(600_000_000) }),
    ];
    // Protobuf, as the OTel exporters send it: raw id bytes.
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/otlp/traces',
      headers: { ...t.auth, 'content-type': 'application/x-protobuf' },
      payload: toProtobuf(anOtlpRequest(spans)),
    });
    expect(res.statusCode, res.body).toBe(200);
    // The trace row follows its spans (the rollup); wait until the detail shows both spans.
    const ready = await pollUntil(
      () => getJson(ctx.app, t, `/v1/traces/${traceHex}`),
      (r) => r.status === 200 && r.body.span_count === 2,
    );
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
  });

  it('answers the same trace for the lowercase hex id, the uppercase hex id and the UUID', async () => {
    const uuid = dashed(traceHex);
    const byLower = await getJson(ctx.app, t, `/v1/traces/${traceHex}`);
    const byUpper = await getJson(ctx.app, t, `/v1/traces/${traceHex.toUpperCase()}`);
    const byUuid = await getJson(ctx.app, t, `/v1/traces/${uuid}`);
    const byUpperUuid = await getJson(ctx.app, t, `/v1/traces/${uuid.toUpperCase()}`);
    for (const res of [byLower, byUpper, byUuid, byUpperUuid]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(traceDetail.safeParse(res.body).success).toBe(true);
    }
    expect(byLower.body.id).toBe(uuid);
    expect(byUpper.body).toEqual(byLower.body);
    expect(byUuid.body).toEqual(byLower.body);
    expect(byUpperUuid.body).toEqual(byLower.body);
  });

  it('carries the OTel hex ids: otel_trace_id on the trace, otel_span_id and otel_parent_span_id on spans', async () => {
    const { body } = await getJson(ctx.app, t, `/v1/traces/${traceHex}`);
    expect(body.otel_trace_id).toBe(traceHex);
    const byName = Object.fromEntries(body.spans.map((s: { name: string }) => [s.name, s]));
    expect(byName['agent run']).toMatchObject({
      id: `00000000-0000-0000-${rootHex.slice(0, 4)}-${rootHex.slice(4)}`,
      parent_span_id: null,
      otel_trace_id: traceHex,
      otel_span_id: rootHex,
      otel_parent_span_id: null,
    });
    expect(byName['llm call']).toMatchObject({
      parent_span_id: byName['agent run'].id,
      otel_trace_id: traceHex,
      otel_span_id: childHex,
      otel_parent_span_id: rootHex,
    });
  });
});

describe('a natively ingested trace', () => {
  it('has null OTel ids on the trace and the new parent field, empty span OTel ids (the spec types them string), and is found by its 32 hex digits too', async () => {
    const start = '2026-09-09T09:00:00.000Z';
    const rootId = crypto.randomUUID();
    const trace = aTrace({
      spans: [
        aSpan({ id: rootId, name: 'root', start_time: start, end_time: '2026-09-09T09:00:01.000Z' }),
        aSpan({ parent_span_id: rootId, name: 'child', start_time: '2026-09-09T09:00:00.100Z', end_time: '2026-09-09T09:00:00.500Z' }),
      ],
    });
    await ingestTraces(ctx.app, t, [trace]);
    const { status, body } = await getJson(ctx.app, t, `/v1/traces/${trace.id}`);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.otel_trace_id).toBeNull();
    expect(body.spans).toHaveLength(2);
    for (const span of body.spans) expect(span).toMatchObject({ otel_trace_id: '', otel_span_id: '', otel_parent_span_id: null });

    // The hex form is the UUID's own 16 bytes, whatever the source.
    const byHex = await getJson(ctx.app, t, `/v1/traces/${trace.id.replaceAll('-', '')}`);
    expect(byHex.status).toBe(200);
    expect(byHex.body).toEqual(body);
  });
});

describe('an id of neither form', () => {
  it.each([
    ['too short', 'abc123'],
    ['31 hex digits', otelTraceId().slice(1)],
    ['33 hex digits', `${otelTraceId()}0`],
    ['not hex', 'zz'.repeat(16)],
    ['dashes misplaced', `${otelTraceId().slice(0, 30)}-ab`],
  ])('is a 400 naming both accepted forms (%s)', async (_, id) => {
    const res = await getJson(ctx.app, t, `/v1/traces/${id}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('bad_request');
    expect(res.body.error).toBe('params.id: must be a trace UUID (8-4-4-4-12 hex digits) or an OTel trace id (32 hex digits)');
  });

  it('a well-formed id of no trace is a 404, in either form', async () => {
    expect((await getJson(ctx.app, t, `/v1/traces/${otelTraceId()}`)).status).toBe(404);
    expect((await getJson(ctx.app, t, `/v1/traces/${dashed(otelTraceId())}`)).status).toBe(404);
  });
});

describe('OpenAPI', () => {
  it('documents both id forms and the OTel fields', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: t.auth })).json();
    const op = doc.paths['/v1/traces/{id}'].get;
    const param = op.parameters.find((p: { name: string; in: string }) => p.name === 'id' && p.in === 'path');
    expect(param.description).toMatch(/UUID.*32 hex digits/);
    expect(new RegExp(param.schema.pattern).test(otelTraceId())).toBe(true);
    expect(new RegExp(param.schema.pattern).test(dashed(otelTraceId()))).toBe(true);
    expect(new RegExp(param.schema.pattern).test('abc')).toBe(false);
    const text = JSON.stringify(op.responses['200']);
    for (const field of ['otel_trace_id', 'otel_span_id', 'otel_parent_span_id']) expect(text).toContain(field);
  });
});
