import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLogPage, chainVerification } from '../../src/modules/audit/schemas.js';
import { appendAudit, GENESIS_HASH, rowHash, type AuditRow } from '../../src/platform/audit/chain.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { queryKeyAuth } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp({ AUDIT_ANCHOR_DIR: mkdtempSync(path.join(tmpdir(), 'looptrace-audit-')) });
});
afterAll(async () => ctx?.close());

const today = () => new Date().toISOString().slice(0, 10);

async function createProject(t: TestTenant, name: string, extraHeaders: Record<string, string> = {}) {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: { ...t.auth, ...extraHeaders }, payload: { name } });
  expect(res.statusCode).toBe(201);
  return res;
}

async function auditLog(headers: Record<string, string>, query = '') {
  const res = await ctx.app.inject({ method: 'GET', url: `/v1/audit-log${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return auditLogPage.parse(res.json());
}

async function chainRows(tenantId: string) {
  return ctx.stores.sql<{ seq: number; prev_hash: string; hash: string; action: string }[]>`
    select seq, prev_hash, hash, action from audit_log where tenant_id = ${tenantId} order by seq`;
}

describe('audit log', () => {
  it('records each successful mutation with the request id of its response, and nothing for refusals', async () => {
    const t = await createTenant(ctx.app);
    const created = await createProject(t, 'audited', { 'x-request-id': `caller-chosen-${t.tenantId}` });
    const project = created.json();
    const patched = await ctx.app.inject({ method: 'PATCH', url: `/v1/projects/${project.id}`, headers: t.auth, payload: { name: 'renamed' } });
    expect(patched.statusCode).toBe(200);
    const refused = await ctx.app.inject({ method: 'POST', url: `/v1/projects/${project.id}/unarchive`, headers: bearer(await sessionToken(t.tenantId, 'viewer')) });
    expect(refused.statusCode).toBe(403);

    const { entries } = await auditLog(t.auth);
    expect(entries.map((e) => [e.seq, e.action])).toEqual([
      [2, 'project.update'],
      [1, 'project.create'],
    ]);
    const [update, create] = entries;
    expect(create!.request_id).toBe(`caller-chosen-${t.tenantId}`);
    expect(create!.request_id).toBe(created.headers['x-request-id']);
    expect(update!.request_id).toBe(patched.headers['x-request-id']);
    expect(update!.request_id).toMatch(/^[0-9a-f-]{36}$/); // minted by the server when the caller sent none
    expect(create).toMatchObject({ actor_type: 'api_key', resource_type: 'project', resource_id: project.id, details: { name: 'audited' } });
    expect(update).toMatchObject({ resource_id: project.id, details: { name: 'renamed' } });
    expect(create!.prev_hash).toBe(GENESIS_HASH);
    expect(update!.prev_hash).toBe(create!.hash);
    expect(create!.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('pages newest first with an opaque cursor, filters by time, and keeps tenants apart', async () => {
    const t = await createTenant(ctx.app);
    const other = await createTenant(ctx.app);
    await createProject(other, 'elsewhere');
    for (let i = 0; i < 5; i++) await createProject(t, `p${i}`);

    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await auditLog(t.auth, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.entries.map((e) => e.seq));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([5, 4, 3, 2, 1]);

    const all = await auditLog(t.auth);
    expect(all.entries.every((e) => e.details.name !== 'elsewhere')).toBe(true);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await auditLog(t.auth, `?from=${encodeURIComponent(future)}`)).entries).toHaveLength(0);
    expect((await auditLog(t.auth, `?to=${encodeURIComponent(future)}`)).entries).toHaveLength(5);
    const thirdCreatedAt = all.entries.find((e) => e.seq === 3)!.created_at;
    const fromThird = await auditLog(t.auth, `?from=${encodeURIComponent(thirdCreatedAt)}`);
    expect(fromThird.entries.map((e) => e.seq).every((s) => s >= 3)).toBe(true);

    const badCursor = await ctx.app.inject({ method: 'GET', url: '/v1/audit-log?cursor=bm90LWEtY3Vyc29y', headers: t.auth });
    expect(badCursor.statusCode).toBe(400);
    expect(badCursor.json().code).toBe('invalid_cursor');
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/audit-log?limit=1001', headers: t.auth })).statusCode).toBe(400);
  });

  it('lets a viewer session read, refuses query-scoped keys and anonymous callers', async () => {
    const t = await createTenant(ctx.app);
    await createProject(t, 'one');
    const viewer = await auditLog(bearer(await sessionToken(t.tenantId, 'viewer')));
    expect(viewer.entries.map((e) => e.action)).toEqual(['project.create']);

    const queryKey = await queryKeyAuth(ctx.app, t.auth);
    for (const url of ['/v1/audit-log', '/v1/audit-log/verify']) {
      const refused = await ctx.app.inject({ method: 'GET', url, headers: queryKey });
      expect(refused.statusCode, url).toBe(403);
      expect(refused.json().code).toBe('scope_forbidden');
      expect((await ctx.app.inject({ method: 'GET', url })).statusCode, url).toBe(401);
    }
    // The key's own creation is in the chain, with its scopes.
    expect((await auditLog(t.auth)).entries[0]).toMatchObject({ action: 'apikey.create', details: { scopes: ['query'] } });
  });

  it('never forks or skips under 50 concurrent writers (direct appends and HTTP mutations)', async () => {
    const t = await createTenant(ctx.app);
    const writers = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0
        ? appendAudit(ctx.stores.sql, t.tenantId, {
            actorType: 'system',
            actorId: 'test',
            action: 'test.append',
            resourceType: 'test',
            resourceId: String(i),
            requestId: null,
            details: { i },
          })
        : ctx.app.inject({ method: 'PATCH', url: `/v1/projects/${t.projectId}`, headers: t.auth, payload: { name: `n${i}` } }),
    );
    const results = await Promise.all(writers);
    for (const r of results) if ('statusCode' in r) expect(r.statusCode).toBe(200);

    const rows = await chainRows(t.tenantId);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    rows.forEach((row, i) => expect(row.prev_hash, `seq ${row.seq}`).toBe(i === 0 ? GENESIS_HASH : rows[i - 1]!.hash));
    expect(new Set(rows.map((r) => r.hash)).size).toBe(50);
    expect(rows.filter((r) => r.action === 'project.update')).toHaveLength(25);
    const [head] = await ctx.stores.sql<{ seq: number; head_hash: string }[]>`
      select seq, head_hash from audit_heads where tenant_id = ${t.tenantId}`;
    expect(head).toEqual({ seq: 50, head_hash: rows[49]!.hash });

    const verify = await ctx.app.inject({ method: 'GET', url: '/v1/audit-log/verify', headers: t.auth });
    expect(chainVerification.parse(verify.json())).toEqual({
      valid: true,
      rows_checked: 50,
      head_hash: rows[49]!.hash,
      broken_at_seq: null,
      reason: null,
    });
  });

  it('reports a row altered in the database as the break, and refuses to anchor that chain', async () => {
    const t = await createTenant(ctx.app);
    for (let i = 0; i < 4; i++) await createProject(t, `p${i}`);
    const before = await chainRows(t.tenantId);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const intact = (await ctx.app.inject({ method: 'GET', url: '/v1/audit-log/verify', headers: viewer })).json();
    expect(intact).toMatchObject({ valid: true, rows_checked: 4, head_hash: before[3]!.hash });

    await ctx.stores.sql`update audit_log set action = 'project.delete' where tenant_id = ${t.tenantId} and seq = 3`;
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/audit-log/verify', headers: viewer });
    expect(res.statusCode).toBe(200);
    expect(chainVerification.parse(res.json())).toEqual({
      valid: false,
      rows_checked: 2,
      head_hash: before[1]!.hash,
      broken_at_seq: 3,
      reason: 'row content does not match its hash',
    });

    await expect(ctx.app.services.auditAnchors.anchor(t.tenantId, today())).rejects.toMatchObject({
      status: 409,
      code: 'audit_chain_broken',
      extra: { broken_at_seq: 3 },
    });
    const anchors = await ctx.stores.sql`select 1 from audit_anchors where tenant_id = ${t.tenantId}`;
    expect(anchors).toHaveLength(0);
    const publicAnswer = await ctx.app.inject({ method: 'GET', url: `/v1/audit/verify?tenant_id=${t.tenantId}&date=${today()}` });
    expect(publicAnswer.json().verified).toBe(false);
  });

  it('catches a forger who rewrites a row and recomputes its hash: the next link breaks', async () => {
    const t = await createTenant(ctx.app);
    for (let i = 0; i < 3; i++) await createProject(t, `p${i}`);
    const [row] = await ctx.stores.sql<AuditRow[]>`
      select * from audit_log where tenant_id = ${t.tenantId} and seq = 2`;
    const forged = { ...row!, action: 'project.delete' };
    const { hash: _old, ...unsealed } = forged;
    await ctx.stores.sql`update audit_log set action = ${forged.action}, hash = ${rowHash(unsealed)}
                         where tenant_id = ${t.tenantId} and seq = 2`;
    const res = (await ctx.app.inject({ method: 'GET', url: '/v1/audit-log/verify', headers: t.auth })).json();
    expect(res).toMatchObject({ valid: false, broken_at_seq: 3, reason: 'prev_hash does not link to the previous row' });
  });
});
