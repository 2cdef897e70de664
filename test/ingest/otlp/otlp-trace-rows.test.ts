import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceUuid } from '../../../src/platform/otel-ids.js';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId } from '../../builders/otlp.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../../helpers/app.js';

/**
 * OTLP trace rows are derived in the group commit that carries their spans (src/modules/ingest/
 * write-path.ts), so a trace is in the list, whole and once, as soon as any request carrying its
 * spans is acknowledged: whatever the order of its spans, however many requests and processes
 * carry them, and when spans are sent again.
 */
let a: TestContext;
let b: TestContext;

beforeAll(async () => {
  // Two processes' worth of ingest (each its own writer, batcher and group commits) on the same stores.
  a = await startApp();
  b = await startApp();
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

interface Listed {
  id: string;
  name: string;
  started_at: string;
  latency_ms: number;
  span_count: number;
  total_token_count: number;
  session_id: string | null;
  tags: string[];
}

async function post(ctx: TestContext, t: TestTenant, spans: object[]) {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: t.auth, payload: anOtlpRequest(spans) });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().partialSuccess ?? {}).toEqual({});
}

/** Every row of the trace in `GET /v1/traces` (the test asserts there is one). */
async function listed(ctx: TestContext, t: TestTenant, traceId: string): Promise<Listed[]> {
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/traces?limit=1000&from=2026-10-01T00:00:00.000Z', headers: t.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().traces as Listed[]).filter((x) => x.id === traceUuid(traceId));
}

/** The traces `GET /v1/traces?q=` finds, with their start. */
async function searched(ctx: TestContext, t: TestTenant, q: string): Promise<[string, string][]> {
  const res = await ctx.app.inject({ method: 'GET', url: `/v1/traces?limit=1000&q=${encodeURIComponent(q)}`, headers: t.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().traces as Listed[]).map((x) => [x.id, x.started_at]);
}

const llm = (traceId: string, spanId: string, parentSpanId: string | undefined, name: string, startMs: number, endMs: number, extra: Record<string, unknown> = {}) =>
  anOtlpSpan({
    traceId,
    spanId,
    ...(parentSpanId ? { parentSpanId } : {}),
    name,
    startTimeUnixNano: ns(startMs * 1_000_000),
    endTimeUnixNano: ns(endMs * 1_000_000),
    attributes: { 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5, ...extra },
  });

describe('an OTLP trace whose spans arrive in pieces', () => {
  it('is listed once and correctly after each of 5 requests in reverse order (root last) across two processes', async () => {
    const t = await createTenant(a.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    // Children end first and so are exported first; each starts earlier than the one sent before it.
    const children = [4, 3, 2, 1].map((k) => llm(traceId, otelSpanId(), rootId, `step ${k}`, k * 100, k * 100 + 50, { 'session.id': `s-${k}` }));
    const root = llm(traceId, rootId, undefined, 'agent run', 0, 1_000, { 'looptrace.tags': ['root-tag'] });
    const sends = [...children, root];
    for (const [i, span] of sends.entries()) {
      await post(i % 2 === 0 ? a : b, t, [span]);
      for (const ctx of [a, b]) {
        const rows = await listed(ctx, t, traceId);
        expect(rows, `after request ${i + 1}`).toHaveLength(1);
        const n = i + 1;
        const earliestChild = 4 - Math.min(i, 3); // step k starts at k × 100 ms
        expect(rows[0]).toMatchObject(
          i < 4
            ? { name: `step ${earliestChild}`, started_at: `2026-11-01T12:00:00.${String(earliestChild * 100).padStart(3, '0')}Z`, latency_ms: 450 - earliestChild * 100, span_count: n, total_token_count: 15 * n }
            : { name: 'agent run', started_at: '2026-11-01T12:00:00.000Z', latency_ms: 1_000, span_count: 5, total_token_count: 75, session_id: 's-1', tags: ['root-tag'] },
        );
        // The first child's words, sent before the trace's start moved (each request moves it
        // earlier): found at the trace's current start, by itself and with the newest span's.
        const here: [string, string][] = [[traceUuid(traceId), rows[0]!.started_at]];
        expect(await searched(ctx, t, 'step 4'), `after request ${n}`).toEqual(here);
        expect(await searched(ctx, t, i < 4 ? `4 ${4 - i}` : '4 agent'), `after request ${n}`).toEqual(here);
      }
    }
  });

  it('counts a span sent again (in a later request, or twice in one) once', async () => {
    const t = await createTenant(a.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    const root = llm(traceId, rootId, undefined, 'root', 0, 500);
    const child = llm(traceId, otelSpanId(), rootId, 'child', 100, 200);
    await post(a, t, [root, child]);
    await post(b, t, [child]);
    await post(a, t, [root, root, child]);
    const [row, ...more] = await listed(a, t, traceId);
    expect(more).toEqual([]);
    expect(row).toMatchObject({ name: 'root', span_count: 2, total_token_count: 30, latency_ms: 500 });
    const [usage] = await a.stores.sql<{ traces: number }[]>`select traces from trace_usage where tenant_id = ${t.tenantId}`;
    expect(usage!.traces).toBe(1);
  });

  it('merges spans sent concurrently to two processes into one row', async () => {
    const t = await createTenant(a.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    const spans = [llm(traceId, rootId, undefined, 'root', 0, 2_000)];
    for (let k = 1; k <= 9; k++) spans.push(llm(traceId, otelSpanId(), rootId, `step ${k}`, k * 100, k * 100 + 10));
    await Promise.all(spans.map((s, i) => post(i % 2 ? a : b, t, [s])));
    const rows = await listed(b, t, traceId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'root', span_count: 10, total_token_count: 150, latency_ms: 2_000 });
  });

  it('rebuilds the state of a trace stored without one (written before states were kept) from its spans', async () => {
    const t = await createTenant(a.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    await post(a, t, [llm(traceId, rootId, undefined, 'root', 0, 900), llm(traceId, otelSpanId(), rootId, 'one', 100, 200)]);
    await a.stores.sql`update trace_registry set otlp_state = null where tenant_id = ${t.tenantId}`;
    await post(b, t, [llm(traceId, otelSpanId(), rootId, 'two', 300, 1_200)]);
    const rows = await listed(a, t, traceId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'root', span_count: 3, total_token_count: 45, latency_ms: 1_200 });
  });

  it('rebuilds, in the reconcile pass, the row of a trace a settlement committed after its writer died', async () => {
    const t = await createTenant(a.app);
    const traceId = otelTraceId();
    const rootId = otelSpanId();
    await post(a, t, [llm(traceId, rootId, undefined, 'root', 0, 700), llm(traceId, otelSpanId(), rootId, 'child', 100, 200)]);
    // What a commit that died after writing the spans leaves once settled: no state, the row owed, no trace row.
    await a.stores.sql`update trace_registry set otlp_state = null, spans_at = now(), rolled_up_at = null where tenant_id = ${t.tenantId}`;
    await a.stores.sql`insert into trace_rows_owed (tenant_id, trace_id) select tenant_id, trace_id from trace_registry where tenant_id = ${t.tenantId}`;
    for (const table of ['traces', 'trace_tokens']) await a.stores.ch.command('test', `DELETE FROM ${table} WHERE tenant_id = {t:UUID}`, { t: t.tenantId });
    expect(await listed(a, t, traceId)).toEqual([]);
    expect(await a.app.services.ingestWrites.rebuildOwed(1_000)).toBeGreaterThanOrEqual(1);
    const rows = await listed(a, t, traceId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'root', span_count: 2, total_token_count: 30, latency_ms: 700 });
    // Its search tokens, made again from the stored spans.
    expect(await searched(a, t, 'CHILD root')).toEqual([[traceUuid(traceId), rows[0]!.started_at]]);
    const [owed] = await a.stores.sql<{ n: number }[]>`
      select count(*)::int as n from trace_registry where tenant_id = ${t.tenantId} and (rolled_up_at is null or spans_at > rolled_up_at)`;
    expect(owed!.n).toBe(0);
    expect(await a.stores.sql`select 1 from trace_rows_owed where tenant_id = ${t.tenantId}`).toHaveLength(0);
  });
});
