import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyFactory, SPANS_PER_TRACE, TRACES_PER_REQUEST } from '../../bench/lib/bodies.js';
import { generateDataset } from '../../bench/lib/generator.js';
import { QUERY_FILTER } from '../../bench/lib/synthetic.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, listAll } from '../helpers/trace-api.js';

// The benchmarks' data must be data the API accepts and reads back consistently, or their numbers
// measure something else. Only correctness here: the benches' timings are never asserted in tests.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

interface ListedTrace {
  id: string;
  latency_ms: number;
  total_token_count: number;
  prompt_tokens_total: number;
  completion_tokens_total: number;
  cost: number;
  span_count: number;
  tags: string[];
  failure_types?: string[];
}

describe('bench dataset generator', () => {
  const TRACES = 1_500;
  let tenant: TestTenant;
  beforeAll(async () => {
    tenant = await createTenant(ctx.app, 'enterprise');
    // Chunks of 700 traces: three INSERT … SELECT rounds, the last one partial.
    await generateDataset(ctx.stores.ch, {
      tenantId: tenant.tenantId,
      projectId: tenant.projectId,
      traces: TRACES,
      endMs: Date.now(),
      chunkTraces: 700,
    });
  });

  it('writes every trace once, listed with ten spans each', async () => {
    const pages = await listAll(ctx.app, tenant, '/v1/traces', 'traces', { limit: 1000 });
    const traces = pages.flat() as ListedTrace[];
    expect(traces).toHaveLength(TRACES);
    expect(new Set(traces.map((t) => t.id)).size).toBe(TRACES);
    for (const t of traces) {
      expect(t.span_count).toBe(SPANS_PER_TRACE);
      expect(t.total_token_count).toBe(t.prompt_tokens_total + t.completion_tokens_total);
    }
    const zeroTokens = traces.filter((t) => t.total_token_count === 0).length;
    expect(zeroTokens).toBeGreaterThan(0);
    expect(zeroTokens).toBeLessThan(TRACES * 0.15);
  });

  it("derives each trace's totals from its spans, as ingest does", async () => {
    const { body: list } = await getJson(ctx.app, tenant, '/v1/traces', { limit: 50 });
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/traces/export?format=jsonl&limit=100000', headers: tenant.auth });
    expect(res.statusCode).toBe(200);
    const rows = res.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { trace_id: string; prompt_tokens: number; completion_tokens: number; cost_usd: number });
    expect(rows).toHaveLength(TRACES * SPANS_PER_TRACE);
    for (const t of list.traces as ListedTrace[]) {
      const spans = rows.filter((r) => r.trace_id === t.id);
      expect(spans).toHaveLength(SPANS_PER_TRACE);
      expect(spans.reduce((sum, s) => sum + s.prompt_tokens, 0)).toBe(t.prompt_tokens_total);
      expect(spans.reduce((sum, s) => sum + s.completion_tokens, 0)).toBe(t.completion_tokens_total);
      expect(spans.reduce((sum, s) => sum + s.cost_usd, 0)).toBeCloseTo(t.cost, 9);
    }
  });

  it("matches the query bench's filter on a minority of traces, and only on matching ones", async () => {
    const pages = await listAll(ctx.app, tenant, '/v1/traces', 'traces', { ...QUERY_FILTER, limit: 1000 });
    const matching = pages.flat() as ListedTrace[];
    expect(matching.length).toBeGreaterThan(0);
    expect(matching.length).toBeLessThan(TRACES * 0.15);
    for (const t of matching) {
      expect(t.latency_ms).toBeGreaterThanOrEqual(Number(QUERY_FILTER.latency_min));
      expect(t.total_token_count).toBeGreaterThanOrEqual(Number(QUERY_FILTER.token_count_min));
      expect(t.tags).toContain(`${QUERY_FILTER.tag_key}:${QUERY_FILTER.tag_value}`);
    }
  });
});

describe('bench ingest bodies', () => {
  it('are accepted whole by POST /v1/ingest/batch, and no two requests share a trace id', async () => {
    const tenant = await createTenant(ctx.app, 'enterprise');
    const bodies = bodyFactory(2);
    const ids = new Set<string>();
    for (const index of [0, 1, 65_537]) {
      const body = bodies.body(index);
      for (const t of (JSON.parse(body) as { traces: { id: string }[] }).traces) ids.add(t.id);
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/ingest/batch',
        headers: { ...tenant.auth, 'content-type': 'application/json' },
        payload: body,
      });
      expect(res.statusCode, res.body.slice(0, 500)).toBe(201);
      expect(res.json().results).toHaveLength(TRACES_PER_REQUEST);
    }
    expect(ids.size).toBe(3 * TRACES_PER_REQUEST);
  });
});
