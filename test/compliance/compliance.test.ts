import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';
import { aWebhook, create } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp({ LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true' });
});
afterAll(async () => ctx?.close());

const DAY_MS = 86_400_000;
const utcDay = (d: Date) => d.toISOString().slice(0, 10);

describe('GET /v1/compliance', () => {
  it('reports retention per project, sealed secrets and open data-subject requests, to every role but not to query-scoped keys', async () => {
    const t = await createTenant(ctx.app);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    const kept = (await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: owner, payload: { name: 'kept forever' } })).json();
    const patched = await ctx.app.inject({ method: 'PATCH', url: `/v1/projects/${t.projectId}`, headers: owner, payload: { retention_days: 30 } });
    expect(patched.statusCode, patched.body).toBe(200);
    await create(ctx.app, '/v1/webhooks', owner, aWebhook('https://127.0.0.1:9/looptrace', { events: ['failure.detected'] }));
    const dsr = await ctx.app.inject({
      method: 'POST',
      url: '/v1/data-subject-requests',
      headers: owner,
      payload: { type: 'export', subject: { session_id: 'compliance-subject' } },
    });
    expect(dsr.statusCode, dsr.body).toBe(202);

    const res = await ctx.app.inject({ method: 'GET', url: '/v1/compliance', headers: bearer(await sessionToken(t.tenantId, 'viewer')) });
    expect(res.statusCode, res.body).toBe(200);
    const report = res.json();
    expect(report.tenant_id).toBe(t.tenantId);
    const byProject = new Map(report.retention.map((p: { project_id: string }) => [p.project_id, p]));
    expect(byProject.get(t.projectId)).toMatchObject({ retention_days: 30, archived: false, last_swept_at: null });
    expect(byProject.get(kept.id)).toMatchObject({ name: 'kept forever', retention_days: null });
    expect(report.encryption).toMatchObject({ algorithm: 'AES-256-GCM', api_keys: 'sha256' });
    expect(report.encryption.secrets).toEqual([
      { kind: 'llm_connection_api_key', count: 0, opens_with_current_key: 0 },
      { kind: 'webhook_secret', count: 1, opens_with_current_key: 1 },
    ]);
    expect(report.open_data_subject_requests.map((r: { id: string }) => r.id)).toContain(dsr.json().id);
    // A tenant created today has no ended day yet.
    expect(report.audit_anchors).toEqual([]);

    const apiKey = await ctx.app.inject({ method: 'GET', url: '/v1/compliance', headers: t.auth });
    expect(apiKey.statusCode).toBe(200);
    const scoped = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: owner, payload: { name: 'q', scopes: ['query'] } });
    const refused = await ctx.app.inject({ method: 'GET', url: '/v1/compliance', headers: bearer(scoped.json().secret) });
    expect(refused.statusCode).toBe(403);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/compliance?days=0', headers: owner })).statusCode).toBe(400);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/compliance?days=91', headers: owner })).statusCode).toBe(400);
  });

  it('checks every ended day since the tenant began: anchors verified, missing days, altered anchors and rewritten chains', async () => {
    const t = await createTenant(ctx.app);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: owner, payload: { name: 'audited' } });
    const today = utcDay(new Date());
    await ctx.app.services.auditAnchors.anchor(t.tenantId, today);
    const report = (days: number, nowOffsetDays: number) =>
      ctx.app.services.compliance.report(t.tenantId, days, new Date(Date.now() + nowOffsetDays * DAY_MS));

    // Two days from now: today (anchored) and tomorrow (not) have ended.
    const tomorrow = utcDay(new Date(Date.now() + DAY_MS));
    const first = await report(30, 2);
    expect(first.audit_anchors.map((d) => [d.date, d.status])).toEqual([
      [today, 'verified'],
      [tomorrow, 'missing'],
    ]);
    expect(first.audit_anchors[0]!.row_count).toBeGreaterThan(0);
    // The window is the last `days` days, never before the tenant existed.
    expect((await report(1, 2)).audit_anchors.map((d) => d.date)).toEqual([tomorrow]);

    await ctx.stores.sql`update audit_anchors set anchored_at = anchored_at + interval '1 second' where tenant_id = ${t.tenantId}`;
    expect((await report(30, 2)).audit_anchors[0]!.status).toBe('signature_invalid');
    await ctx.stores.sql`update audit_anchors set anchored_at = anchored_at - interval '1 second' where tenant_id = ${t.tenantId}`;
    expect((await report(30, 2)).audit_anchors[0]!.status).toBe('verified');

    const [anchor] = await ctx.stores.sql<{ row_count: number }[]>`select row_count from audit_anchors where tenant_id = ${t.tenantId}`;
    await ctx.stores.sql`update audit_log set hash = repeat('f', 64) where tenant_id = ${t.tenantId} and seq = ${anchor!.row_count}`;
    expect((await report(30, 2)).audit_anchors[0]!.status).toBe('chain_mismatch');
  });
});
