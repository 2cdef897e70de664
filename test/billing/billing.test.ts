import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { aTrace } from '../builders/traces.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

describe('GET /v1/billing', () => {
  it("shows the plan, the month's usage against every quota and the limits, the same after a restart", async () => {
    const t = await createTenant(ctx.app, 'starter');
    const owner = bearer(await sessionToken(t.tenantId, 'owner', { sub: 'owner-1' }));
    const member = bearer(await sessionToken(t.tenantId, 'member', { sub: 'member-1' }));
    const traces = [aTrace(), aTrace(), aTrace()];
    await ingestTraces(ctx.app, t, traces);
    for (const trace of traces.slice(0, 2)) {
      const res = await ctx.app.inject({ method: 'POST', url: '/v1/eval', headers: t.auth, payload: { trace_id: trace.id, metric_name: 'm', config: { provider: 'builtin', preset: 'json_valid' } } });
      expect(res.statusCode).toBe(202);
    }
    const rule = await ctx.app.inject({ method: 'POST', url: '/v1/eval-rules', headers: t.auth, payload: { name: 'r', metric_name: 'm', enabled: false, config: { provider: 'builtin', preset: 'json_valid' } } });
    expect(rule.statusCode).toBe(201);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: member })).statusCode).toBe(200); // the member signs in: a seat

    const expected = {
      tenant_id: t.tenantId,
      plan: 'starter',
      usage: {
        traces: { used: 3, limit: 50_000 },
        evals: { used: 2, limit: 2_500 },
        eval_rules: { used: 1, limit: 3 },
        seats: { used: 2, limit: 3 },
      },
      limits: { traces_per_month: 50_000, evals_per_month: 2_500, eval_rules: 3, seats: 3, dataset_export_rows: 100, otlp_export_spans_per_page: 10_000 },
    };
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/billing', headers: owner });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject(expected);
    const month = new Date().toISOString().slice(0, 7);
    expect(res.json().period.start).toBe(`${month}-01T00:00:00.000Z`);

    await ctx.close();
    ctx = await startApp();
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/billing', headers: owner })).json()).toMatchObject(expected);
  });

  it('is for owners only', async () => {
    const t = await createTenant(ctx.app, 'enterprise');
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/billing', headers: bearer(await sessionToken(t.tenantId, 'member')) })).statusCode).toBe(403);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/billing', headers: t.auth })).statusCode).toBe(403);
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/billing', headers: bearer(await sessionToken(t.tenantId, 'owner')) });
    expect(res.json().usage.traces).toEqual({ used: 0, limit: null });
    expect(res.json().limits.query_requests_per_minute).toBeNull();
  });
});
