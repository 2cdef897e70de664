import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestContext } from '../helpers/app.js';
import { controlApi } from '../helpers/control-api.js';
import { withQuery } from '../helpers/trace-api.js';
import { aModelRoute } from '../builders/resources.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const { tenant, call, created } = controlApi(() => ctx.app);

describe('control loop access and validation', () => {
  it('refuses Starter and Pro tenants with 402 plan_upgrade_required', async () => {
    for (const plan of ['starter', 'pro'] as const) {
      const t = await tenant(plan);
      for (const [method, url, headers] of [
        ['GET', '/v1/control/actions', t.owner],
        ['GET', '/v1/policies', t.auth],
        ['POST', '/v1/model-routes', t.auth],
      ] as const) {
        const res = await call(method, url, headers, method === 'POST' ? { name: 'r', model: { provider: 'openai', model: 'gpt-4o' } } : undefined);
        expect(res, `${plan} ${method} ${url}`).toMatchObject({ status: 402, body: { code: 'plan_upgrade_required', required_plan: 'team' } });
      }
    }
  });

  it('refuses API keys on the dashboard-only control action routes', async () => {
    const t = await tenant();
    const id = randomUUID();
    for (const [method, url] of [
      ['GET', '/v1/control/actions'],
      ['GET', `/v1/control/actions/${id}`],
      ['GET', `/v1/control/actions/${id}/diff`],
      ['POST', `/v1/control/actions/${id}/approve`],
      ['POST', `/v1/control/actions/${id}/reject`],
    ] as const) {
      expect(await call(method, url, t.auth), url).toMatchObject({ status: 403, body: { code: 'session_required' } });
    }
    expect((await call('GET', withQuery('/v1/control/actions', { from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' }), t.owner)).status).toBe(400);
  });

  it('validates max_retry_depth and max_cascade_depth and applies their defaults', async () => {
    const t = await tenant();
    const base = { name: 'p', project_id: t.projectId, trigger: { failure_types: ['timeout'] }, steps: [{ type: 'retry' }] };
    for (const bad of [{ max_retry_depth: 0 }, { max_retry_depth: 11 }, { max_retry_depth: 2.5 }, { max_cascade_depth: 0 }, { max_cascade_depth: 21 }]) {
      expect((await call('POST', '/v1/policies', t.owner, { ...base, ...bad })).status, JSON.stringify(bad)).toBe(400);
    }
    const p = await created('/v1/policies', t, base);
    expect(p).toMatchObject({ max_retry_depth: 3, max_cascade_depth: 5, require_approval: false, enabled: true });
    expect((await call('PATCH', `/v1/policies/${p.id}`, t.owner, { max_cascade_depth: 21 })).status).toBe(400);
    expect((await call('PATCH', `/v1/policies/${p.id}`, t.member, { max_retry_depth: 10, max_cascade_depth: 20 })).body).toMatchObject({ max_retry_depth: 10, max_cascade_depth: 20 });
    expect((await call('DELETE', `/v1/policies/${p.id}`, t.member)).status).toBe(403);
    expect((await call('DELETE', `/v1/policies/${p.id}`, t.owner)).status).toBe(204);
  });

  it('documents the control routes, their bodies and their codes in the OpenAPI document', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: (await tenant('team')).auth })).json();
    expect(doc.paths['/v1/policies'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('max_cascade_depth');
    expect(doc.paths['/v1/control/actions/{id}/approve'].post['x-access']).toMatchObject({ tokens: ['session'], roles: ['owner'], plan: 'team' });
    expect(JSON.stringify(doc.paths['/v1/control/actions/{id}/approve'].post.responses['409'])).toContain('control.action_state');
    expect(doc.paths['/v1/control/actions/{id}/diff'].get.responses).toHaveProperty('202');
  });

  it('keeps model routes: create, read, change, list, delete by the owner', async () => {
    const t = await tenant();
    const route = await created('/v1/model-routes', t, aModelRoute({ name: 'r' }));
    expect(route).toMatchObject({ fallbacks: [], project_id: null });
    const patched = await call('PATCH', `/v1/model-routes/${route.id}`, t.auth, { fallbacks: [{ provider: 'anthropic', model: 'claude-3-5-haiku-latest' }] });
    expect(patched.body.fallbacks).toEqual([{ provider: 'anthropic', model: 'claude-3-5-haiku-latest' }]);
    expect((await call('GET', '/v1/model-routes', t.auth)).body.model_routes.map((r: { id: string }) => r.id)).toEqual([route.id]);
    expect((await call('DELETE', `/v1/model-routes/${route.id}`, t.member)).status).toBe(403);
    expect((await call('DELETE', `/v1/model-routes/${route.id}`, t.owner)).status).toBe(204);
    expect((await call('GET', `/v1/model-routes/${route.id}`, t.auth)).status).toBe(404);
  });
});
