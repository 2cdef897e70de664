import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceUuid } from '../../src/platform/otel-ids.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll } from '../helpers/trace-api.js';
import { drainOutbox, pollUntil, startAppWithWorkers } from '../helpers/workers.js';
import { anOtlpRequest, anOtlpSpan, otelTraceId } from '../builders/otlp.js';
import { aTrace } from '../builders/traces.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers(['evals', 'eval-rules']);
});
afterAll(async () => ctx?.close());

const containsParis = { provider: 'builtin', preset: 'contains', params: { value: 'Paris' } };
const aRule = (overrides: Record<string, unknown> = {}) => ({ name: 'mentions Paris', metric_name: 'paris', config: containsParis, ...overrides });

async function createRule(t: TestTenant, body: Record<string, unknown>, headers = t.auth) {
  return ctx.app.inject({ method: 'POST', url: '/v1/eval-rules', headers, payload: body });
}

async function evaluationsOf(t: TestTenant, ruleId: string) {
  const pages = await listAll(ctx.app, t, '/v1/evals', 'evals', { rule_id: ruleId, limit: 1000 });
  return pages.flat() as unknown as { trace_id: string; status: string; score: number; eval_version_id: string }[];
}

/** Ids of traces the rule should score, computed here without the server's code. */
const sampledByTest = (ids: readonly string[], rate: number) =>
  new Set(ids.filter((id) => createHash('sha256').update(id).digest().readUIntBE(0, 6) / 2 ** 48 < rate));

describe('eval rules: CRUD and versions', () => {
  it('creates, versions, lists, updates and deletes (owner only)', async () => {
    const t = await createTenant(ctx.app);
    const created = await createRule(t, aRule({ sampling_rate: 0.25, threshold: 0.8, filter: { name: 'checkout' } }));
    expect(created.statusCode, created.body).toBe(201);
    const rule = created.json();
    expect(rule).toMatchObject({ version: 1, min_score_drop: 0, enabled: true, sampling_rate: 0.25, threshold: 0.8, project_id: null, filter: { name: 'checkout' } });
    const v1 = await getJson(ctx.app, t, `/v1/eval-versions/${rule.current_version_id}`);
    expect(v1.body).toMatchObject({ rule_id: rule.id, version: 1, threshold: 0.8, min_score_drop: 0, config: containsParis });

    const patched = await ctx.app.inject({ method: 'PATCH', url: `/v1/eval-rules/${rule.id}`, headers: t.auth, payload: { min_score_drop: 0.1, threshold: 0.6 } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ version: 2, min_score_drop: 0.1, threshold: 0.6, sampling_rate: 0.25, name: 'mentions Paris' });
    expect(patched.json().current_version_id).not.toBe(rule.current_version_id);
    expect((await getJson(ctx.app, t, `/v1/eval-versions/${rule.current_version_id}`)).body.threshold).toBe(0.8);
    expect((await getJson(ctx.app, t, `/v1/eval-versions/${patched.json().current_version_id}`)).body).toMatchObject({ version: 2, min_score_drop: 0.1 });

    await createRule(t, aRule({ name: 'second', enabled: false }));
    const pages = await listAll(ctx.app, t, '/v1/eval-rules', 'eval_rules', { limit: 1 });
    expect(pages.flat()).toHaveLength(2);
    expect((await getJson(ctx.app, t, '/v1/eval-rules', { enabled: 'false' })).body.eval_rules.map((r: { name: string }) => r.name)).toEqual(['second']);

    const member = bearer(await sessionToken(t.tenantId, 'member'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/eval-rules/${rule.id}`, headers: member })).statusCode).toBe(403);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/eval-rules/${rule.id}`, headers: owner })).statusCode).toBe(204);
    expect((await getJson(ctx.app, t, `/v1/eval-rules/${rule.id}`)).status).toBe(404);
    expect((await getJson(ctx.app, t, `/v1/eval-versions/${rule.current_version_id}`)).status).toBe(200);
  });

  it('caps Starter at 3 rules with 402 eval_rules_quota_exceeded, and Pro not', async () => {
    const starter = await createTenant(ctx.app, 'starter');
    for (let i = 0; i < 3; i++) expect((await createRule(starter, aRule({ name: `r${i}` }))).statusCode).toBe(201);
    const refused = await createRule(starter, aRule({ name: 'r3' }));
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ code: 'eval_rules_quota_exceeded', error: expect.any(String) });
    const pro = await createTenant(ctx.app, 'pro');
    for (let i = 0; i < 4; i++) expect((await createRule(pro, aRule({ name: `r${i}` }))).statusCode).toBe(201);
  });

  it('validates at the edge and keeps tenants apart', async () => {
    const [a, b] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    for (const body of [
      aRule({ sampling_rate: 1.5 }),
      aRule({ min_score_drop: -0.1 }),
      aRule({ filter: { tag_key: 'env' } }),
      aRule({ filter: { latency_min: 10, latency_max: 5 } }),
      aRule({ filter: { project_id: a.projectId } }),
      aRule({ name: '' }),
    ]) {
      expect((await createRule(a, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await createRule(a, aRule({ project_id: b.projectId }))).statusCode).toBe(404);
    const rule = (await createRule(a, aRule())).json();
    expect((await getJson(ctx.app, b, `/v1/eval-rules/${rule.id}`)).status).toBe(404);
    expect((await getJson(ctx.app, b, `/v1/eval-versions/${rule.current_version_id}`)).status).toBe(404);
    expect((await ctx.app.inject({ method: 'PATCH', url: `/v1/eval-rules/${rule.id}`, headers: b.auth, payload: { enabled: false } })).statusCode).toBe(404);
  });
});

describe('online evaluation', () => {
  async function ingestOtlp(t: TestTenant, traceHexes: readonly string[], output: string) {
    const spans = traceHexes.map((traceId) =>
      anOtlpSpan({ traceId, attributes: { 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.completion': output } }),
    );
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: t.auth, payload: anOtlpRequest(spans) });
    expect(res.statusCode, res.body).toBe(200);
  }

  it('scores newly stored native and OTLP traces by itself, sampling the same half every time', async () => {
    const nativeIds: string[] = [];
    const otlpHexes = Array.from({ length: 500 }, () => otelTraceId());
    const natives = Array.from({ length: 500 }, (_, i) => aTrace({ output: i % 2 === 0 ? 'Paris' : 'Lyon' }));
    nativeIds.push(...natives.map((n) => n.id));
    const allIds = [...nativeIds, ...otlpHexes.map(traceUuid)];
    const expected = sampledByTest(allIds, 0.5);
    expect(expected.size).toBeGreaterThan(420);
    expect(expected.size).toBeLessThan(580);

    const scoredSets: Set<string>[] = [];
    for (const run of [1, 2]) {
      const t = await createTenant(ctx.app);
      const before = aTrace({ output: 'Paris' });
      await ingestTraces(ctx.app, t, [before]);
      const rule = (await createRule(t, aRule({ sampling_rate: 0.5 }))).json();
      const disabled = (await createRule(t, aRule({ name: 'off', enabled: false }))).json();
      for (let i = 0; i < natives.length; i += 250) await ingestTraces(ctx.app, t, natives.slice(i, i + 250));
      await ingestOtlp(t, otlpHexes, 'Paris, of course');

      const evals = await pollUntil(() => evaluationsOf(t, rule.id), (e) => e.length >= expected.size && e.every((x) => x.status === 'completed'), 600, 200);
      const scored = new Set(evals.map((e) => e.trace_id));
      expect(scored.size, `run ${run}`).toBe(evals.length);
      expect(scored).toEqual(expected);
      expect(scored.has(before.id)).toBe(false);
      expect(evals.every((e) => e.eval_version_id === rule.current_version_id)).toBe(true);
      // Native traces alternate Paris/Lyon; every OTLP trace mentions Paris.
      for (const e of evals) {
        const native = natives.findIndex((n) => n.id === e.trace_id);
        expect(e.score, e.trace_id).toBe(native === -1 || native % 2 === 0 ? 1 : 0);
      }
      expect(await evaluationsOf(t, disabled.id)).toEqual([]);
      scoredSets.push(scored);
    }
    expect(scoredSets[1]).toEqual(scoredSets[0]);
  });

  it("scores only traces matching the rule's filter and project", async () => {
    const t = await createTenant(ctx.app);
    const other = (await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'other' } })).json();
    const rule = (await createRule(t, aRule({ filter: { name: 'checkout' }, project_id: t.projectId }))).json();
    const matching = aTrace({ name: 'checkout', output: 'Paris' });
    const wrongName = aTrace({ name: 'search', output: 'Paris' });
    const wrongProject = aTrace({ name: 'checkout', output: 'Paris', project_id: other.id });
    await ingestTraces(ctx.app, t, [matching, wrongName, wrongProject]);
    await pollUntil(() => evaluationsOf(t, rule.id), (e) => e.length >= 1, 300, 100);
    // Every candidate of the tenant looked at (here or by the scheduled job): an evaluation is created
    // in the transaction that drops its candidate, so no other of these traces can be scored later.
    await drainOutbox(ctx, 'eval_candidates', t.tenantId, () => ctx.app.services.onlineEvals.drain());
    const evals = await pollUntil(() => evaluationsOf(t, rule.id), (e) => e.every((x) => x.status === 'completed'), 300, 100);
    expect(evals.map((e) => e.trace_id)).toEqual([matching.id]);
    expect(evals[0]!.score).toBe(1);
  });
});
