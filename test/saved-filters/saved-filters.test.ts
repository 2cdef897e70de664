import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
  ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

describe('saved filters (dashboard-only)', () => {
  it('are shared by every member; only their author or an owner changes them', async () => {
    const t = await createTenant(ctx.app);
    const alice = bearer(await sessionToken(t.tenantId, 'member', { sub: 'alice' }));
    const bob = bearer(await sessionToken(t.tenantId, 'member', { sub: 'bob' }));
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer', { sub: 'vera' }));
    const owner = bearer(await sessionToken(t.tenantId, 'owner', { sub: 'olga' }));

    const filters = { model: 'gpt-4o', latency_min: 500, tags: ['prod'] };
    const created = await call('POST', '/v1/saved-filters', alice, { project_id: t.projectId, name: ' Slow GPT-4o ', filters });
    expect(created.statusCode, created.body).toBe(201);
    const saved = created.json();
    const aliceId = (await call('GET', '/v1/me', alice)).json().user.id;
    expect(saved).toMatchObject({ name: 'Slow GPT-4o', filters, created_by: aliceId, project_id: t.projectId, tenant_id: t.tenantId });

    for (const who of [alice, bob, viewer, owner]) {
      const list = await call('GET', `/v1/saved-filters?project_id=${t.projectId}`, who);
      expect(list.statusCode).toBe(200);
      expect(list.json().items.map((f: { id: string }) => f.id)).toEqual([saved.id]);
    }

    expect((await call('PATCH', `/v1/saved-filters/${saved.id}`, bob, { name: 'mine now' })).statusCode).toBe(403);
    expect((await call('DELETE', `/v1/saved-filters/${saved.id}`, bob)).statusCode).toBe(403);
    expect((await call('POST', '/v1/saved-filters', viewer, { project_id: t.projectId, name: 'v', filters: {} })).statusCode).toBe(403);
    const renamed = await call('PATCH', `/v1/saved-filters/${saved.id}`, alice, { name: 'Slow' });
    expect(renamed.json()).toMatchObject({ name: 'Slow', filters });
    expect(Date.parse(renamed.json().updated_at)).toBeGreaterThanOrEqual(Date.parse(saved.updated_at));
    const refiltered = await call('PATCH', `/v1/saved-filters/${saved.id}`, owner, { filters: { model: 'gpt-4.1' } });
    expect(refiltered.json()).toMatchObject({ name: 'Slow', filters: { model: 'gpt-4.1' } });
    expect((await call('DELETE', `/v1/saved-filters/${saved.id}`, owner)).statusCode).toBe(204);
    expect((await call('GET', `/v1/saved-filters/${saved.id}`, alice)).statusCode).toBe(404);
  });

  it('validates name, filters and project, and refuses API keys', async () => {
    const [t, other] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const ok = { project_id: t.projectId, name: 'n', filters: {} };
    expect((await call('POST', '/v1/saved-filters', member, { ...ok, name: 'x'.repeat(101) })).statusCode).toBe(400);
    expect((await call('POST', '/v1/saved-filters', member, { ...ok, name: 'x'.repeat(100) })).statusCode).toBe(201);
    for (const filters of [[], 'text', 3, null]) {
      expect((await call('POST', '/v1/saved-filters', member, { ...ok, filters })).statusCode, JSON.stringify(filters)).toBe(400);
    }
    expect((await call('POST', '/v1/saved-filters', member, { ...ok, project_id: other.projectId })).statusCode).toBe(404);
    const byKey = await call('GET', '/v1/saved-filters', t.auth);
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().code).toBe('session_required');
    const otherMember = bearer(await sessionToken(other.tenantId, 'owner'));
    expect((await call('GET', '/v1/saved-filters', otherMember)).json().items).toEqual([]);
  });

  it('pages through the list without gaps', async () => {
    const t = await createTenant(ctx.app);
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await call('POST', '/v1/saved-filters', member, { project_id: t.projectId, name: `f${i}`, filters: { i } })).json().id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: { id: string }[]; next_cursor: string | null } = (await call('GET', `/v1/saved-filters?limit=2${cursor ? `&cursor=${cursor}` : ''}`, member)).json();
      seen.push(...page.items.map((f) => f.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].sort());
  });
});
