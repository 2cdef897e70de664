import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

async function storedTrace(tenantId: string, id: string) {
  return ctx.stores.ch.rows<Record<string, unknown>>(
    'test',
    'SELECT * FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 AND id = {id:UUID}',
    { t: tenantId, id },
  );
}

describe('POST /v1/ingest', () => {
  it('stores the trace and its spans before answering 201, with derived totals', async () => {
    const t = await createTenant(ctx.app);
    const start = new Date('2026-11-02T10:00:00.000Z');
    const trace = aTrace({
      input: { question: 'capital?' },
      tags: ['env:prod', 'beta'],
      tag_map: { team: 'search' },
      spans: [
        aSpan({ name: 'retrieve', type: 'retrieval', model: null, prompt_tokens: 0, completion_tokens: 0 }, start),
        aSpan({ cost: 0.5, prompt_tokens: 100, completion_tokens: 50, error: 'Request timed out after 30s' }, new Date(start.getTime() + 100)),
      ],
    });
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: trace.id, span_count: 2 });
    const [row] = await storedTrace(t.tenantId, trace.id);
    expect(row).toMatchObject({
      project_id: t.projectId,
      input: '{"question":"capital?"}',
      latency_ms: 600,
      total_token_count: 150,
      span_count: 2,
      failure_types: ['timeout'],
      error: 'Request timed out after 30s',
      model: 'gpt-4o-mini',
    });
    expect(row!.tag_pairs).toEqual(expect.arrayContaining(['env\u001fprod', 'team\u001fsearch']));
    expect(row!.cost).toBeCloseTo(0.5);
  });

  it('computes cost from the price table when a span has none', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace({ spans: [aSpan({ model: 'gpt-4o-mini-2024-07-18', prompt_tokens: 1_000_000, completion_tokens: 1_000_000 })] });
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace })).statusCode).toBe(201);
    const [row] = await storedTrace(t.tenantId, trace.id);
    expect(row!.cost).toBeCloseTo(0.15 + 0.6);
  });

  it('sums costs without binary floating-point noise', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace({ spans: [aSpan({ cost: 0.1 }), aSpan({ cost: 0.2 })] });
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace })).statusCode).toBe(201);
    const [row] = await storedTrace(t.tenantId, trace.id);
    expect(row!.cost).toBe(0.3);
  });

  it('answers 409 for an existing id, 422 for a missing field, 400 for contradictions', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace })).statusCode).toBe(201);
    const again = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace });
    expect(again.statusCode).toBe(409);
    const { output: _omit, ...noOutput } = aTrace();
    const missing = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: noOutput });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error).toContain('body.output');
    const backwards = aTrace({ spans: [aSpan({ end_time: '2026-01-01T00:00:00Z' })] });
    const bad = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: backwards });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toContain('spans.0.end_time');
  });

  it('refuses times before 2000 or more than a day ahead, naming the field', async () => {
    const t = await createTenant(ctx.app);
    const ancient = aTrace({ spans: [aSpan({}, new Date('1999-12-31T23:59:59Z'))] });
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: ancient });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toContain('spans.0.start_time: is before 2000-01-01');
    const future = aTrace({ started_at: new Date(Date.now() + 3 * 86_400_000).toISOString() });
    const ahead = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: future });
    expect(ahead.statusCode).toBe(400);
    expect(ahead.json().error).toContain('started_at: is more than 24 h in the future');
  });

  it('commits a batch whose traces span more monthly partitions than one ClickHouse insert allows by default', async () => {
    const t = await createTenant(ctx.app);
    const traces = Array.from({ length: 150 }, (_, i) => aTrace({ spans: [aSpan({}, new Date(Date.UTC(2010, i, 15)))] }));
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(201);
  });

  it('refuses an archived project with 403 error.project.archived', async () => {
    const t = await createTenant(ctx.app);
    const other = (await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'other' } })).json();
    await ctx.app.inject({ method: 'POST', url: `/v1/projects/${t.projectId}/archive`, headers: t.auth });
    // The key's own project is archived: refused whether the body names no project or an active one.
    for (const projectId of [undefined, other.id]) {
      for (const url of ['/v1/ingest', '/v1/ingest/batch']) {
        const trace = aTrace(projectId ? { project_id: projectId } : {});
        const payload = url.endsWith('batch') ? { traces: [trace] } : trace;
        const res = await ctx.app.inject({ method: 'POST', url, headers: t.auth, payload });
        expect(res.statusCode, `${url} ${projectId}`).toBe(403);
        expect(res.json().code).toBe('error.project.archived');
      }
    }
    // A key of the active project may still not write into the archived one.
    const key = (await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'k', project_id: other.id } })).json();
    const intoArchived = await ctx.app.inject({
      method: 'POST',
      url: '/v1/ingest',
      headers: { authorization: `Bearer ${key.secret}` },
      payload: aTrace({ project_id: t.projectId }),
    });
    expect(intoArchived.statusCode).toBe(403);
    const ok = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: { authorization: `Bearer ${key.secret}` }, payload: aTrace() });
    expect(ok.statusCode).toBe(201);
  });
});

describe('POST /v1/ingest/batch', () => {
  it('answers 201 all created, 207 mixed with per-item results, 409 all duplicates', async () => {
    const t = await createTenant(ctx.app);
    const traces = [aTrace(), aTrace(), aTrace()];
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } });
    expect(created.statusCode).toBe(201);
    expect(created.json().results.map((r: { status: number }) => r.status)).toEqual([201, 201, 201]);

    const { name: _n, ...invalid } = aTrace();
    const mixed = await ctx.app.inject({
      method: 'POST',
      url: '/v1/ingest/batch',
      headers: t.auth,
      payload: { traces: [traces[0], aTrace(), invalid] },
    });
    expect(mixed.statusCode).toBe(207);
    const results = mixed.json().results;
    expect(results.map((r: { status: number }) => r.status)).toEqual([409, 201, 422]);
    expect(results[2].error).toContain('traces.2.name');

    const dup = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } });
    expect(dup.statusCode).toBe(409);
  });

  it('stops at the monthly quota with 402 and a code', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const month = new Date().toISOString().slice(0, 7) + '-01';
    await ctx.stores.sql`insert into trace_usage (tenant_id, month, traces) values (${t.tenantId}, ${month}, 49999)`;
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: [aTrace(), aTrace()] } });
    expect(res.statusCode).toBe(207);
    expect(res.json().results.map((r: { status: number; code?: string }) => [r.status, r.code])).toEqual([
      [201, undefined],
      [402, 'trace_quota_exceeded'],
    ]);
    const single = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: aTrace() });
    expect(single.statusCode).toBe(402);
    expect(single.json().code).toBe('trace_quota_exceeded');
  });
});
