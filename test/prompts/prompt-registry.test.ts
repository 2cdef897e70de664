import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, sessionToken, startApp, type TestContext } from '../helpers/app.js';
import { controlApi } from '../helpers/control-api.js';
import { withQuery } from '../helpers/trace-api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const { tenant, call } = controlApi(() => ctx.app);

describe('prompt registry', () => {
  it('numbers versions added concurrently to one prompt one after the other', async () => {
    const t = await tenant('pro');
    const name = 'concurrent';
    expect((await call('POST', '/v1/prompts', t.auth, { project_id: t.projectId, name, content: 'v1' })).status).toBe(201);
    const added = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call('POST', `/v1/prompts/${name}/versions`, t.auth, { project_id: t.projectId, content: `v${i + 2}`, activate: false })),
    );
    expect(added.map((r) => r.status)).toEqual(Array(6).fill(201));
    const detail = await call('GET', withQuery(`/v1/prompts/${name}`, { project_id: t.projectId }), t.auth);
    expect(detail.body.versions.map((v: { version: number }) => v.version)).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  it('versions prompts and serves the active one to API keys, query-scoped ones too', async () => {
    const t = await tenant('starter');
    const name = 'support';
    const first = await call('POST', '/v1/prompts', t.auth, { project_id: t.projectId, name, content: 'Answer: {{input}}' });
    expect(first).toMatchObject({ status: 201, body: { name, project_id: t.projectId, active_version: { version: 1, content: 'Answer: {{input}}' } } });
    expect(first.body.active_version.created_by).toMatch(/^apikey:/);
    expect((await call('POST', '/v1/prompts', t.auth, { project_id: t.projectId, name, content: 'again' })).body.code).toBe('prompt.exists');

    const staged = await call('POST', `/v1/prompts/${name}/versions`, t.auth, { project_id: t.projectId, content: 'staged', activate: false });
    expect(staged.body.active_version.version).toBe(1);
    const live = await call('POST', `/v1/prompts/${name}/versions`, t.member, { project_id: t.projectId, content: 'Live: {{input}}' });
    expect(live).toMatchObject({ status: 201, body: { active_version: { version: 3, content: 'Live: {{input}}' } } });
    const detail = await call('GET', withQuery(`/v1/prompts/${name}`, { project_id: t.projectId }), t.auth);
    expect(detail.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);

    const scopedKey = await call('POST', '/v1/apikeys', t.auth, { name: 'sdk', scopes: ['query'] });
    const sdk = { authorization: `Bearer ${scopedKey.body.secret}` };
    expect((await call('GET', `/v1/prompts/${name}/active`, sdk)).body).toMatchObject({ version: 3, content: 'Live: {{input}}', project_id: t.projectId });
    expect((await call('POST', '/v1/prompts', sdk, { project_id: t.projectId, name: 'x', content: 'y' })).body.code).toBe('scope_forbidden');
    expect((await call('GET', withQuery(`/v1/prompts/${name}/active`, { project_id: t.projectId }), t.owner)).status).toBe(200);
    expect((await call('GET', `/v1/prompts/${name}/active`, t.owner)).status).toBe(400);
    expect((await call('GET', '/v1/prompts/unknown/active', t.auth)).status).toBe(404);
    expect((await call('POST', '/v1/prompts', t.auth, { project_id: t.projectId, name: 'deployments', content: 'y' })).status).toBe(400);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect((await call('POST', `/v1/prompts/${name}/versions`, viewer, { project_id: t.projectId, content: 'z' })).body.code).toBe('role_forbidden');
    expect((await call('GET', withQuery(`/v1/prompts/${name}`, { project_id: t.projectId }), viewer)).status).toBe(200);
    const listed = await call('GET', withQuery('/v1/prompts', { project_id: t.projectId }), t.auth);
    expect(listed.body).toMatchObject({ prompts: [{ name, active_version: { version: 3 } }], has_more: false, next_cursor: null });
  });

  it('declares every request body in the OpenAPI document', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: (await tenant('starter')).auth })).json();
    const body = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
    expect(body('/v1/prompts').required).toEqual(['project_id', 'name', 'content']);
    expect(body('/v1/prompts/{name}/versions').properties).toHaveProperty('activate');
    expect(body('/v1/prompts/deployments').required).toEqual(['project_id', 'cluster_signature', 'prompt_name']);
    expect(JSON.stringify(body('/v1/prompts/deployments/{id}/reject'))).toContain('reason');
    expect(doc.paths['/v1/prompts/deployments/{id}/approve'].post.responses['409'].description).toContain('prompt_deployment.invalid_state');
    expect(doc.paths['/v1/prompts/{name}/active'].get['x-access']).toMatchObject({ tokens: ['apikey', 'session'], scope: 'read', plan: null });
  });
});
