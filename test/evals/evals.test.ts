import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';
import { aTrace } from '../builders/traces.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers(['evals']);
});
afterAll(async () => ctx?.close());

const builtin = (preset: string, params: Record<string, unknown> = {}) => ({ provider: 'builtin', preset, params });

async function trigger(t: TestTenant, payload: Record<string, unknown>, headers = t.auth) {
  return ctx.app.inject({ method: 'POST', url: '/v1/eval', headers, payload });
}

async function finished(t: TestTenant, id: string) {
  const done = await pollUntil(
    () => getJson(ctx.app, t, `/v1/eval/${id}`),
    (r) => r.body.status === 'completed' || r.body.status === 'failed',
  );
  expect(done.status).toBe(200);
  return done.body;
}

async function evaluate(t: TestTenant, traceId: string, config: Record<string, unknown>, metric = 'quality') {
  const res = await trigger(t, { trace_id: traceId, metric_name: metric, config });
  expect(res.statusCode, res.body).toBe(202);
  expect(res.json()).toEqual({ eval_id: expect.any(String), status: 'pending' });
  return finished(t, res.json().eval_id);
}

describe('POST /v1/eval with builtin checks', () => {
  it('scores each check through the queue and records the evaluation', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace({ output: '{"answer": "Paris", "confidence": 0.9}', metadata: { expected: '{"answer": "Paris", "confidence": 0.9}' } });
    await ingestTraces(ctx.app, t, [trace]);
    const cases: [Record<string, unknown>, number][] = [
      [builtin('exact_match'), 1],
      [builtin('exact_match', { expected: 'Lyon' }), 0],
      [builtin('contains', { values: ['Paris', 'Berlin'] }), 0.5],
      [builtin('regex', { pattern: '"answer":\\s*"[A-Z]\\w+"' }), 1],
      [builtin('json_valid'), 1],
      [builtin('json_schema', { schema: { type: 'object', required: ['answer', 'sources'] } }), 0],
      [builtin('levenshtein', { expected: '{"answer": "Paris", "confidence": 0.8}' }), 1 - 1 / '{"answer": "Paris", "confidence": 0.8}'.length],
      [builtin('length_between', { min: 1, max: 10, unit: 'words' }), 1],
    ];
    for (const [config, score] of cases) {
      const ev = await evaluate(t, trace.id, config);
      expect(ev, JSON.stringify(config)).toMatchObject({ status: 'completed', trace_id: trace.id, project_id: t.projectId, context: 'fresh' });
      expect(ev.score).toBeCloseTo(score, 10);
      expect(ev.passed).toBe(score >= 0.5);
      expect(ev.reasoning).toEqual(expect.any(String));
      expect(ev).toMatchObject({ prompt_tokens: 0, completion_tokens: 0, cost: 0, judge_model: null, source_action_id: null, original_evaluation_id: null });
      expect(Date.parse(ev.completed_at)).toBeGreaterThanOrEqual(Date.parse(ev.created_at));
    }
  });

  it('fails an evaluation whose check cannot apply, with the reason', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    const ev = await evaluate(t, trace.id, builtin('exact_match'));
    expect(ev.status).toBe('failed');
    expect(ev.error).toMatch(/no expected output/);
    expect(ev.score).toBeNull();
  });

  it('refuses bad configurations at the edge with 400 naming the field', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    const bad: [Record<string, unknown>, string][] = [
      [builtin('regex', { pattern: '(a+)+$' }), 'body.config.params.pattern'],
      [builtin('regex', { pattern: '(' }), 'body.config.params.pattern'],
      [builtin('contains', {}), 'body.config.params'],
      [builtin('no_such_check'), 'body.config.preset'],
      [builtin('json_schema', { schema: { type: 'not-a-type' } }), 'body.config.params.schema'],
      [{ provider: 'openai', preset: 'custom' }, 'body.config.prompt'],
      [{ provider: 'openai', preset: 'nonsense' }, 'body.config.preset'],
      [{ provider: 'cohere', preset: 'correctness' }, 'body.config.provider'],
    ];
    for (const [config, path] of bad) {
      const res = await trigger(t, { trace_id: trace.id, metric_name: 'm', config });
      expect(res.statusCode, JSON.stringify(config)).toBe(400);
      expect(res.json().details.map((d: { path: string }) => d.path), res.body).toContain(path);
    }
  });

  it('refuses a judge the tenant has no credentials for with 422, for evaluations and rules alike', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    const judge = { provider: 'anthropic', preset: 'correctness' };
    const refused = await trigger(t, { trace_id: trace.id, metric_name: 'm', config: judge });
    expect(refused.statusCode).toBe(422);
    expect(refused.json()).toMatchObject({ code: 'eval.no_llm_credentials', error: expect.stringContaining('ANTHROPIC_API_KEY') });
    const rule = await ctx.app.inject({ method: 'POST', url: '/v1/eval-rules', headers: t.auth, payload: { name: 'r', metric_name: 'm', config: judge } });
    expect(rule.statusCode).toBe(422);
    expect((await getJson(ctx.app, t, '/v1/evals')).body.evals).toEqual([]);
  });

  it("answers 404 for an unknown trace or another tenant's, and hides another tenant's evaluation", async () => {
    const [a, b] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const trace = aTrace({ metadata: { expected: 'Paris.' } });
    await ingestTraces(ctx.app, a, [trace]);
    expect((await trigger(b, { trace_id: trace.id, metric_name: 'm', config: builtin('json_valid') })).statusCode).toBe(404);
    const ev = await evaluate(a, trace.id, builtin('exact_match'));
    expect(ev.score).toBe(1);
    expect((await getJson(ctx.app, b, `/v1/eval/${ev.id}`)).status).toBe(404);
    expect((await getJson(ctx.app, b, '/v1/evals')).body.evals).toEqual([]);
  });

  it('lets viewers and query keys read but not trigger', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    const ev = await evaluate(t, trace.id, builtin('json_valid'));
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/eval/${ev.id}`, headers: viewer })).statusCode).toBe(200);
    expect((await trigger(t, { trace_id: trace.id, metric_name: 'm', config: builtin('json_valid') }, viewer)).statusCode).toBe(403);
    const reader = await queryKeyAuth(ctx.app, t.auth);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/evals', headers: reader })).statusCode).toBe(200);
    const refused = await trigger(t, { trace_id: trace.id, metric_name: 'm', config: builtin('json_valid') }, reader);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('scope_forbidden');
  });

  it('refuses with 402 eval_quota_exceeded once the monthly quota is spent', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    const month = `${new Date().toISOString().slice(0, 7)}-01`;
    await ctx.stores.sql`insert into eval_usage (tenant_id, month, evals) values (${t.tenantId}, ${month}, 2499)`;
    expect((await trigger(t, { trace_id: trace.id, metric_name: 'm', config: builtin('json_valid') })).statusCode).toBe(202);
    const refused = await trigger(t, { trace_id: trace.id, metric_name: 'm', config: builtin('json_valid') });
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ code: 'eval_quota_exceeded', required_plan: 'pro', error: expect.stringContaining('2500') });
    const [usage] = await ctx.stores.sql<{ evals: string }[]>`select evals from eval_usage where tenant_id = ${t.tenantId}`;
    expect(Number(usage!.evals)).toBe(2500);
  });
});

describe('GET /v1/evals', () => {
  it('filters and pages newest first without gaps or repeats', async () => {
    const t = await createTenant(ctx.app);
    const traces = [aTrace({ output: 'yes' }), aTrace({ output: 'no' })];
    await ingestTraces(ctx.app, t, traces);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const ev = await evaluate(t, traces[i % 2]!.id, builtin('contains', { value: 'yes' }), i < 5 ? 'helpful' : 'other');
      ids.push(ev.id);
    }
    const pages = await listAll(ctx.app, t, '/v1/evals', 'evals', { limit: 2 });
    expect(pages.flat().map((e) => e.id)).toEqual([...ids].reverse());
    const helpfulOfFirst = (await getJson(ctx.app, t, '/v1/evals', { metric_name: 'helpful', trace_id: traces[0]!.id })).body.evals;
    expect(helpfulOfFirst.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[2], ids[0]]);
    expect((await getJson(ctx.app, t, '/v1/evals', { status: 'pending' })).body.evals).toEqual([]);
    const firstPage = await getJson(ctx.app, t, '/v1/evals', { limit: 1 });
    const mismatched = await getJson(ctx.app, t, '/v1/evals', { limit: 1, metric_name: 'other', cursor: firstPage.body.next_cursor });
    expect(mismatched.status).toBe(400);
    expect(mismatched.body.code).toBe('invalid_cursor');
    const backwards = await getJson(ctx.app, t, '/v1/evals', { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' });
    expect(backwards.status).toBe(400);
  });
});

describe('GET /v1/eval/compare', () => {
  it('matches averages and pass rates computed independently, and nulls for an empty window', async () => {
    const t = await createTenant(ctx.app);
    const outputs = ['Paris', 'Pari', 'Paros', 'London', 'P', 'Paris!', 'Nice', 'Parisian'];
    const traces = outputs.map((output) => aTrace({ output }));
    await ingestTraces(ctx.app, t, traces);
    const evals = [];
    for (const trace of traces) evals.push(await evaluate(t, trace.id, builtin('levenshtein', { expected: 'Paris' }), 'similarity'));
    // Other metrics and failed evaluations never count.
    await evaluate(t, traces[0]!.id, builtin('json_valid'), 'other');
    // Move the first half into January and the second into February.
    const baseline = evals.slice(0, 4);
    const candidate = evals.slice(4);
    for (const [i, ev] of evals.entries()) {
      const at = i < 4 ? `2026-01-1${i}T00:00:00Z` : `2026-02-1${i}T00:00:00Z`;
      await ctx.stores.sql`update evaluations set created_at = ${at}::timestamptz where id = ${ev.id}`;
    }
    const stats = (window: { score: number; passed: boolean }[]) => ({
      avg: window.reduce((s, e) => s + e.score, 0) / window.length,
      passRate: window.filter((e) => e.passed).length / window.length,
    });
    const b = stats(baseline);
    const c = stats(candidate);
    const res = await getJson(ctx.app, t, '/v1/eval/compare', {
      metric: 'similarity',
      baseline_from: '2026-01-01T00:00:00Z',
      baseline_to: '2026-01-31T23:59:59Z',
      candidate_from: '2026-02-01T00:00:00Z',
      candidate_to: '2026-02-28T23:59:59Z',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.metric).toBe('similarity');
    expect(res.body.baseline.count).toBe(4);
    expect(res.body.candidate.count).toBe(4);
    expect(res.body.baseline.avg_score).toBeCloseTo(b.avg, 12);
    expect(res.body.candidate.avg_score).toBeCloseTo(c.avg, 12);
    expect(res.body.baseline.pass_rate).toBeCloseTo(b.passRate, 12);
    expect(res.body.candidate.pass_rate).toBeCloseTo(c.passRate, 12);
    expect(res.body.delta.avg_score).toBeCloseTo(c.avg - b.avg, 12);
    expect(res.body.delta.pass_rate).toBeCloseTo(c.passRate - b.passRate, 12);

    const empty = await getJson(ctx.app, t, '/v1/eval/compare', {
      metric: 'similarity',
      baseline_from: '2025-01-01T00:00:00Z',
      baseline_to: '2025-01-31T00:00:00Z',
      candidate_from: '2026-02-01T00:00:00Z',
      candidate_to: '2026-02-28T23:59:59Z',
    });
    expect(empty.body.baseline).toEqual({ avg_score: null, count: 0, pass_rate: null });
    expect(empty.body.delta).toEqual({ avg_score: null, pass_rate: null });
    const inverted = await getJson(ctx.app, t, '/v1/eval/compare', {
      metric: 'similarity',
      baseline_from: '2026-02-01T00:00:00Z',
      baseline_to: '2026-01-01T00:00:00Z',
      candidate_from: '2026-02-01T00:00:00Z',
      candidate_to: '2026-02-28T23:59:59Z',
    });
    expect(inverted.status).toBe(400);
  });
});
