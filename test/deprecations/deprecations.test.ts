import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

async function seedAnomalies(tenantId: string, projectId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const start = new Date(Date.UTC(2026, 10, 1, 0, 5 * i));
    const id = newId();
    ids.push(id);
    await ctx.stores.sql`
      insert into anomalies (id, tenant_id, project_id, metric, window_start, window_end, observed, expected, score, severity)
      values (${id}, ${tenantId}, ${projectId}, 'latency_p95', ${start}, ${new Date(start.getTime() + 300_000)}, 900, 100, 7, 'critical')`;
  }
  // The listing is newest window first.
  return ids.reverse();
}

describe('deprecations', () => {
  it('are listed to any valid credential (every role, scoped keys too), and to no one without one', async () => {
    const t = await createTenant(ctx.app);
    const scoped = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'q', scopes: ['query'] } });
    const revoked = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'gone' } });
    await ctx.app.inject({ method: 'DELETE', url: `/v1/apikeys/${revoked.json().id}`, headers: t.auth });
    const callers = {
      'full key': t.auth,
      'query key': bearer(scoped.json().secret),
      owner: bearer(await sessionToken(t.tenantId, 'owner')),
      member: bearer(await sessionToken(t.tenantId, 'member')),
      viewer: bearer(await sessionToken(t.tenantId, 'viewer')),
    };
    for (const [who, headers] of Object.entries(callers)) {
      expect((await ctx.app.inject({ method: 'GET', url: '/v1/deprecations', headers })).statusCode, who).toBe(200);
    }
    for (const [who, headers] of Object.entries({ none: {}, malformed: bearer('nope'), revoked: bearer(revoked.json().secret) })) {
      const refused = await ctx.app.inject({ method: 'GET', url: '/v1/deprecations', headers });
      expect(refused.statusCode, who).toBe(401);
      expect(refused.json().code, who).toBe('unauthorized');
    }

    const res = await ctx.app.inject({ method: 'GET', url: '/v1/deprecations', headers: t.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json().deprecations).toContainEqual({
      id: 'anomalies-offset',
      kind: 'parameter',
      method: 'GET',
      path: '/v1/anomalies',
      parameter: 'offset',
      deprecated_at: '2026-11-24',
      sunset_at: '2027-11-24',
      replacement: 'cursor',
      description: expect.any(String),
    });
  });

  it('a request using a deprecated parameter gets Deprecation and Sunset headers, one without it does not', async () => {
    const t = await createTenant(ctx.app);
    const ids = await seedAnomalies(t.tenantId, t.projectId, 5);

    const plain = await ctx.app.inject({ method: 'GET', url: '/v1/anomalies?limit=2', headers: t.auth });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers.deprecation).toBeUndefined();
    expect(plain.headers.sunset).toBeUndefined();

    const skipped = await ctx.app.inject({ method: 'GET', url: '/v1/anomalies?limit=2&offset=1', headers: t.auth });
    expect(skipped.statusCode).toBe(200);
    expect(skipped.headers.deprecation).toBe(`@${Date.UTC(2026, 10, 24) / 1000}`);
    expect(skipped.headers.sunset).toBe('Wed, 24 Nov 2027 00:00:00 GMT');
    expect(skipped.headers.link).toBe('</v1/deprecations>; rel="deprecation"; type="application/json"');
    const first = skipped.json();
    expect(first.anomalies.map((a: { id: string }) => a.id)).toEqual(ids.slice(1, 3));

    // The cursor of an offset page continues after it, without repeating the offset.
    const next = await ctx.app.inject({ method: 'GET', url: `/v1/anomalies?limit=2&cursor=${first.next_cursor}`, headers: t.auth });
    expect(next.json().anomalies.map((a: { id: string }) => a.id)).toEqual(ids.slice(3, 5));
    expect(next.headers.deprecation).toBeUndefined();

    const both = await ctx.app.inject({ method: 'GET', url: `/v1/anomalies?offset=1&cursor=${first.next_cursor}`, headers: t.auth });
    expect(both.statusCode).toBe(400);
    for (const bad of ['-1', '10001', 'x']) {
      expect((await ctx.app.inject({ method: 'GET', url: `/v1/anomalies?offset=${bad}`, headers: t.auth })).statusCode).toBe(400);
    }
  });

  it('the OpenAPI document marks the deprecated parameter', async () => {
    const t = await createTenant(ctx.app);
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: t.auth })).json();
    const params = doc.paths['/v1/anomalies'].get.parameters as { name: string; deprecated?: boolean }[];
    expect(params.find((p) => p.name === 'offset')?.deprecated).toBe(true);
    expect(params.find((p) => p.name === 'limit')?.deprecated).toBeUndefined();
    // The listing takes the document's bearer requirement, like every /v1/ operation but the audit verification.
    expect(doc.paths['/v1/deprecations'].get.security).toBeUndefined();
    expect(doc.paths['/v1/deprecations'].get['x-access']).toMatchObject({ tokens: ['apikey', 'session'], roles: ['owner', 'member', 'viewer'], scope: 'read' });
  });
});
