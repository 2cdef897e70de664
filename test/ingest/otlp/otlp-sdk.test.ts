import type { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace as traceApi, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spanUuid, traceUuid } from '../../../src/platform/otel-ids.js';
import { createTenant, type TestContext, type TestTenant } from '../../helpers/app.js';
import { storedSpans, type StoredSpan } from '../../helpers/stored-spans.js';
import { pollUntil, startAppWithWorkers } from '../../helpers/workers.js';

/*
 * The real OpenTelemetry JS SDK and both OTLP/HTTP exporters against the app listening on a
 * loopback port: what an instrumented application does, nothing hand-encoded.
 */

let ctx: TestContext;
let url: string;
beforeAll(async () => {
  ctx = await startAppWithWorkers();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}/v1/otlp/traces`;
});
afterAll(async () => ctx?.close());

type ExporterKind = 'proto' | 'json';
type ProcessorKind = 'simple' | 'batch';

function makeExporter(kind: ExporterKind, t: TestTenant, compression: 'gzip' | 'none'): SpanExporter {
  const options = { url, headers: { Authorization: `Bearer ${t.apiKey}` }, compression } as ConstructorParameters<typeof ProtoExporter>[0];
  return kind === 'proto' ? new ProtoExporter(options) : new JsonExporter(options);
}

/** A provider sending to the app, plus an in-memory copy of every span as the SDK ended it. */
function makeProvider(exporter: SpanExporter, processor: ProcessorKind) {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'sdk-test', 'deployment.environment': 'test' }),
    spanProcessors: [
      processor === 'simple' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter, { scheduledDelayMillis: 50, maxExportBatchSize: 3 }),
      new SimpleSpanProcessor(memory),
    ],
  });
  return { provider, memory, tracer: provider.getTracer('looptrace-sdk-test', '0.0.1') };
}

/** An agent run: root, two LLM calls and a failing tool call; the root ends first or last. */
function agentRun(tracer: Tracer, rootEndsFirst: boolean): string {
  const root = tracer.startSpan('agent run', { kind: SpanKind.SERVER, attributes: { 'openinference.span.kind': 'AGENT', 'input.value': 'plan a trip', 'session.id': 'sess-sdk' } });
  const parent = traceApi.setSpan(ROOT_CONTEXT, root);
  const children = [1, 2].map((i) => {
    const llm = tracer.startSpan(`chat ${i}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 100 * i,
        'gen_ai.usage.output_tokens': 10 * i,
        'gen_ai.prompt.0.role': 'user',
        'gen_ai.prompt.0.content': `question ${i}`,
        'gen_ai.completion.0.content': `answer ${i}`,
      },
    }, parent);
    return llm;
  });
  const tool = tracer.startSpan('search flights', { attributes: { 'openinference.span.kind': 'TOOL' } }, parent);
  tool.recordException(new Error('upstream timed out'));
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream timed out' });
  root.setAttribute('output.value', 'done');
  if (rootEndsFirst) root.end();
  for (const c of children) c.end();
  tool.end();
  if (!rootEndsFirst) root.end();
  return root.spanContext().traceId;
}

const nanos = (t: ReadableSpan['startTime']): string => (BigInt(t[0]) * 1_000_000_000n + BigInt(t[1])).toString();


/** Every span the SDK ended is stored exactly: ids, parent links, nanosecond times, mapped fields. */
function expectStoredAsSent(stored: StoredSpan[], sent: ReadableSpan[]) {
  expect(stored).toHaveLength(sent.length);
  const byId = new Map(stored.map((s) => [s.span_id, s]));
  for (const span of sent) {
    const row = byId.get(spanUuid(span.spanContext().spanId));
    expect(row, span.name).toBeDefined();
    const parentId = span.parentSpanContext?.spanId;
    expect(row).toMatchObject({
      name: span.name,
      otel_span_id: span.spanContext().spanId,
      parent_span_id: parentId ? spanUuid(parentId) : null,
      start_ns: nanos(span.startTime),
      end_ns: nanos(span.endTime),
    });
    expect(JSON.parse(row!.metadata)['otel.resource']).toMatchObject({ 'service.name': 'sdk-test' });
  }
  const chat2 = stored.find((s) => s.name === 'chat 2')!;
  expect(chat2).toMatchObject({ type: 'llm', model: 'gpt-4o-mini', prompt_tokens: 200, completion_tokens: 20, input: '[{"role":"user","content":"question 2"}]', output: 'answer 2' });
  expect(stored.find((s) => s.name === 'search flights')).toMatchObject({ type: 'tool', error: 'upstream timed out', failure_type: 'timeout' });
  expect(stored.find((s) => s.name === 'agent run')).toMatchObject({ type: 'agent', input: 'plan a trip', output: 'done' });
}

async function expectTraceRow(t: TestTenant, traceId: string) {
  const id = traceUuid(traceId);
  const rows = await pollUntil(
    () => ctx.stores.ch.rows<Record<string, unknown>>('test', 'SELECT * FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 AND id = {id:UUID}', { t: t.tenantId, id }),
    (r) => r.length === 1 && r[0]!.span_count === 4,
  );
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ name: 'agent run', span_count: 4, prompt_tokens_total: 300, completion_tokens_total: 30, session_id: 'sess-sdk', error: 'upstream timed out', failure_types: ['timeout'] });
  return rows[0]!;
}

const cases: { exporter: ExporterKind; processor: ProcessorKind; compression: 'gzip' | 'none' }[] = [
  { exporter: 'proto', processor: 'simple', compression: 'none' },
  { exporter: 'proto', processor: 'batch', compression: 'gzip' },
  { exporter: 'json', processor: 'simple', compression: 'gzip' },
  { exporter: 'json', processor: 'batch', compression: 'none' },
];

describe('OpenTelemetry JS SDK → POST /v1/otlp/traces', () => {
  for (const c of cases) {
    it(`${c.exporter} exporter, ${c.processor} processor, ${c.compression} compression: spans stored as sent, trace rolled up`, async () => {
      const t = await createTenant(ctx.app);
      const { provider, memory, tracer } = makeProvider(makeExporter(c.exporter, t, c.compression), c.processor);
      const rootLast = agentRun(tracer, false);
      const rootFirst = agentRun(tracer, true);
      await provider.forceFlush();
      const finished = memory.getFinishedSpans(); // shutdown() empties the in-memory exporter
      await provider.shutdown();

      for (const traceId of [rootLast, rootFirst]) {
        const sent = finished.filter((s) => s.spanContext().traceId === traceId);
        expectStoredAsSent(await storedSpans(ctx.stores.ch, t.tenantId, traceUuid(traceId)), sent);
        const row = await expectTraceRow(t, traceId);
        // The trace spans from its earliest start to its latest end (a child may end after an early-ended root), in ms.
        const ms = (t: ReadableSpan['startTime']) => BigInt(nanos(t)) / 1_000_000n;
        const start = sent.map((s) => ms(s.startTime)).reduce((a, b) => (b < a ? b : a));
        const end = sent.map((s) => ms(s.endTime)).reduce((a, b) => (b > a ? b : a));
        expect(row.latency_ms).toBe(Number(end - start));
      }
    });
  }

  it('is readable through GET /v1/traces/{id} when the traces module serves it', async (test) => {
    if (!ctx.app.hasRoute({ method: 'GET', url: '/v1/traces/:id' })) test.skip();
    const t = await createTenant(ctx.app);
    const { provider, tracer } = makeProvider(makeExporter('proto', t, 'none'), 'simple');
    const traceId = agentRun(tracer, false);
    await provider.forceFlush();
    await provider.shutdown();
    await expectTraceRow(t, traceId);
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/traces/${traceUuid(traceId)}`, headers: t.auth });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ id: traceUuid(traceId), name: 'agent run', span_count: 4 });
    expect(body.spans.map((s: { otel_trace_id: string }) => s.otel_trace_id)).toEqual(Array(4).fill(traceId));
  });
});
