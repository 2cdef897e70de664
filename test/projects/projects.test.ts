import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';
import { aProject, create } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

describe('projects', () => {
  it('creates, lists, reads, renames and toggles autoship', async () => {
    const t = await createTenant(ctx.app);
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'Search bot' } });
    expect(created.statusCode).toBe(201);
    const project = created.json();
    expect(project).toMatchObject({ name: 'Search bot', status: 'active', prompt_autoship_enabled: false, tenant_id: t.tenantId });

    const list = await ctx.app.inject({ method: 'GET', url: '/v1/projects?limit=1', headers: t.auth });
    expect(list.statusCode).toBe(200);
    expect(list.json().projects).toHaveLength(1);
    expect(list.json().has_more).toBe(true);
    const page2 = await ctx.app.inject({ method: 'GET', url: `/v1/projects?limit=1&cursor=${list.json().next_cursor}`, headers: t.auth });
    expect(page2.json().projects[0].id).toBe(project.id);
    expect(page2.json().has_more).toBe(false);

    const patched = await ctx.app.inject({
      method: 'PATCH',
      url: `/v1/projects/${project.id}`,
      headers: t.auth,
      payload: { name: 'Search', prompt_autoship_enabled: true },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ name: 'Search', prompt_autoship_enabled: true });
    const read = await ctx.app.inject({ method: 'GET', url: `/v1/projects/${project.id}`, headers: t.auth });
    expect(read.json().prompt_autoship_enabled).toBe(true);
  });

  it('refuses to archive the last active project with 409 and its code, and unarchives', async () => {
    const t = await createTenant(ctx.app);
    const last = await ctx.app.inject({ method: 'POST', url: `/v1/projects/${t.projectId}/archive`, headers: t.auth });
    expect(last.statusCode).toBe(409);
    expect(last.json().code).toBe('error.project.cannot_archive_last');

    const second = await create(ctx.app, '/v1/projects', t.auth, aProject({ name: 'two' }));
    const archived = await ctx.app.inject({ method: 'POST', url: `/v1/projects/${t.projectId}/archive`, headers: t.auth });
    expect(archived.statusCode).toBe(200);
    expect(archived.json().status).toBe('archived');
    const refused = await ctx.app.inject({ method: 'POST', url: `/v1/projects/${second.id}/archive`, headers: t.auth });
    expect(refused.statusCode).toBe(409);
    const unarchived = await ctx.app.inject({ method: 'POST', url: `/v1/projects/${t.projectId}/unarchive`, headers: t.auth });
    expect(unarchived.json()).toMatchObject({ status: 'active', archived_at: null });
  });

  it('never lets concurrent archives leave a tenant without an active project', async () => {
    const t = await createTenant(ctx.app);
    const ids = [t.projectId];
    for (let i = 0; i < 3; i++) {
      ids.push((await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: `p${i}` } })).json().id);
    }
    const results = await Promise.all(
      ids.map((id) => ctx.app.inject({ method: 'POST', url: `/v1/projects/${id}/archive`, headers: t.auth })),
    );
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(3);
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(1);
    const active = await ctx.app.inject({ method: 'GET', url: '/v1/projects?status=active', headers: t.auth });
    expect(active.json().projects).toHaveLength(1);
  });

  it("answers 404 for another tenant's project", async () => {
    const a = await createTenant(ctx.app);
    const b = await createTenant(ctx.app);
    for (const [method, suffix] of [['GET', ''], ['PATCH', ''], ['POST', '/archive'], ['POST', '/unarchive']] as const) {
      const res = await ctx.app.inject({
        method,
        url: `/v1/projects/${a.projectId}${suffix}`,
        headers: b.auth,
        ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}),
      });
      expect(res.statusCode, `${method} ${suffix}`).toBe(404);
    }
  });

  it('lets a viewer read but not write', async () => {
    const t = await createTenant(ctx.app);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: viewer })).statusCode).toBe(200);
    const write = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: viewer, payload: { name: 'x' } });
    expect(write.statusCode).toBe(403);
    expect(write.json().code).toBe('role_forbidden');
  });
});
