import Fastify, { type RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROLES, ANY_TOKEN, PUBLIC, WRITERS, assertRouteHasPolicy, type AccessPolicy } from '../../src/platform/access.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { MUTATING_METHODS, startAppWithRoutes, toOpenApiPath, type RegisteredRoute } from '../helpers/routes.js';

/**
 * The only routes reachable without a credential (DESIGN.md §3, §7; spec Authentication rule 1):
 * under /v1/ the audit verification alone; beside it the operations probes, the published audit
 * key, and the web dashboard's files and sign-in (how a browser gets a session).
 */
const PUBLIC_ALLOWLIST = new Set([
  '/healthz', '/readyz', '/metrics', '/v1/audit/verify', '/audit/public-key',
  '/', '/assets/*', '/*', '/auth/config', '/auth/dev-tenants', '/auth/dev-session',
]);
/** Public POSTs: the development sign-in mints a token and stores nothing (not registered in production). */
const PUBLIC_WRITES = new Set(['POST /auth/dev-session']);
/** Spec, Authentication rule 1: "every request except GET /v1/audit/verify carries" a token. */
const PUBLIC_API = new Set(['GET /v1/audit/verify', 'HEAD /v1/audit/verify']);

const ZERO_ID = '00000000-0000-4000-8000-000000000000';
const concrete = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, ZERO_ID);

let ctx: TestContext;
let routes: RegisteredRoute[];
let t: TestTenant;
let queryKey: { authorization: string };
beforeAll(async () => {
  ({ ctx, routes } = await startAppWithRoutes());
  // Enterprise: no rate limit in the way of a few hundred calls.
  t = await createTenant(ctx.app, 'enterprise');
  const created = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'query only', scopes: ['query'] } });
  expect(created.statusCode, created.body).toBe(201);
  queryKey = bearer(created.json<{ secret: string }>().secret);
});
afterAll(async () => ctx?.close());

const label = (r: RegisteredRoute) => `${r.method} ${r.url}`;

describe('every registered route', () => {
  it('was seen by the walk, including the routes this suite knows exist', () => {
    const seen = new Set(routes.map(label));
    for (const known of ['GET /healthz', 'GET /v1/projects', 'POST /v1/projects', 'DELETE /v1/apikeys/:id', 'GET /v1/me']) {
      expect(seen, known).toContain(known);
    }
    // The walk sees what the app serves.
    for (const r of routes) expect(ctx.app.hasRoute({ method: r.method as 'GET', url: r.url, constraints: r.constraints }), label(r)).toBe(true);
  });

  it('declares an access policy', () => {
    expect(routes.filter((r) => !r.access).map(label)).toEqual([]);
  });

  it('names at least one token kind and role when not public', () => {
    const bad = routes.filter((r) => r.access && !r.access.public && (r.access.tokens.length === 0 || r.access.roles.length === 0));
    expect(bad.map(label)).toEqual([]);
  });

  it("is scope 'write' with an audit action when it changes state", () => {
    const bad = routes.filter(
      (r) =>
        MUTATING_METHODS.has(r.method) &&
        !r.access?.readOnly &&
        !PUBLIC_WRITES.has(label(r)) &&
        !(r.access?.scope === 'write' && typeof r.access.audit === 'string' && r.access.audit.length > 0),
    );
    expect(bad.map(label)).toEqual([]);
  });

  it('is read-only only as a POST, only where the query cannot be a URL, audited only where such reads are (tenant SQL)', () => {
    const readOnly = routes.filter((r) => r.access?.readOnly);
    expect(readOnly.map(label).sort()).toEqual(['POST /v1/search/spans', 'POST /v1/sql']);
    expect(readOnly.filter((r) => r.access?.audit !== false).map((r) => [label(r), r.access?.audit])).toEqual([['POST /v1/sql', 'sql.query']]);
  });

  it('is public only if it is on the allowlist, and then only for reads', () => {
    const publicRoutes = routes.filter((r) => r.access?.public);
    expect(publicRoutes.filter((r) => !PUBLIC_ALLOWLIST.has(r.url)).map(label)).toEqual([]);
    expect(publicRoutes.filter((r) => MUTATING_METHODS.has(r.method) && !PUBLIC_WRITES.has(label(r))).map(label)).toEqual([]);
  });

  it('lets no viewer write', () => {
    const bad = routes.filter((r) => MUTATING_METHODS.has(r.method) && !r.access?.readOnly && r.access?.roles.includes('viewer'));
    expect(bad.map(label)).toEqual([]);
  });

  it('refuses every non-public route without a credential (401), before any handler runs', async () => {
    const guarded = routes.filter((r) => !r.access?.public);
    expect(guarded.length).toBeGreaterThan(0);
    for (const r of guarded) {
      const res = await ctx.app.inject({ method: r.method as 'GET', url: concrete(r.url), ...(MUTATING_METHODS.has(r.method) ? { payload: {} } : {}) });
      expect(res.statusCode, label(r)).toBe(401);
    }
  });
});

describe('Authentication rule 1: every /v1/ request but GET /v1/audit/verify carries a token', () => {
  it('leaves no other /v1/ route public', () => {
    const open = routes.filter((r) => r.url.startsWith('/v1/') && r.access?.public).map(label);
    expect(open.sort()).toEqual([...PUBLIC_API].sort());
  });

  it('answers 401 on every other /v1/ route with no token, a malformed one, an unknown key or a revoked key', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/apikeys', headers: t.auth, payload: { name: 'to revoke' } });
    const revokedKey = created.json<{ id: string; secret: string }>();
    const revoked = await ctx.app.inject({ method: 'DELETE', url: `/v1/apikeys/${revokedKey.id}`, headers: t.auth });
    expect(revoked.statusCode, revoked.body).toBe(200);
    const credentials: [string, Record<string, string>][] = [
      ['none', {}],
      ['not a bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['malformed', bearer('not-a-token')],
      ['unknown key', bearer(`lt_${'x'.repeat(40)}`)],
      ['revoked key', bearer(revokedKey.secret)],
    ];
    const api = routes.filter((r) => r.url.startsWith('/v1/') && !PUBLIC_API.has(label(r)));
    expect(api.map(label)).toEqual(expect.arrayContaining(['GET /v1/deprecations', 'GET /v1/openapi.json']));
    const wrong: string[] = [];
    for (const r of api) {
      for (const [name, headers] of credentials) {
        const res = await ctx.app.inject({ method: r.method as 'GET', url: concrete(r.url), headers, ...(MUTATING_METHODS.has(r.method) ? { payload: {} } : {}) });
        if (res.statusCode !== 401 || (r.method !== 'HEAD' && res.json().code !== 'unauthorized')) wrong.push(`${label(r)} (${name}): ${res.statusCode}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('leaves the audit verification open to anyone', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/audit/verify?tenant_id=${t.tenantId}&date=2026-01-01` });
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('Authentication rule 4: a write call with a scope-restricted key is 403 scope_forbidden', () => {
  const writes = () => routes.filter((r) => MUTATING_METHODS.has(r.method) && !r.access?.readOnly && !r.access?.public);

  it('on every POST, PUT, PATCH and DELETE route, whatever its roles, token kinds or plan, before the role check', async () => {
    const seen = new Set(writes().map(label));
    // The ones the role check used to answer first (owner-only deletes, DLQ resolution), among all others.
    for (const known of [
      'DELETE /v1/datasets/:id', 'DELETE /v1/eval-rules/:id', 'DELETE /v1/failure-rules/:id', 'DELETE /v1/llm-connections/:id',
      'DELETE /v1/model-routes/:id', 'DELETE /v1/policies/:id', 'DELETE /v1/webhooks/:id', 'POST /v1/dlq/:id/retry', 'POST /v1/dlq/:id/discard',
    ]) {
      expect(seen, known).toContain(known);
    }
    const wrong: string[] = [];
    for (const r of writes()) {
      const res = await ctx.app.inject({ method: r.method as 'POST', url: concrete(r.url), headers: queryKey, payload: {} });
      if (res.statusCode !== 403 || res.json().code !== 'scope_forbidden') wrong.push(`${label(r)}: ${res.statusCode} ${res.json().code}`);
    }
    expect(writes().length).toBeGreaterThan(50);
    expect(wrong).toEqual([]);
  });

  it('and not on the read-only POST (semantic search is readable with a query key)', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/v1/search/spans', headers: queryKey, payload: {} });
    expect(res.json().code).not.toBe('scope_forbidden');
  });

  it('as the OpenAPI document says: x-access scope write, scope_forbidden first among its 403s', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: queryKey })).json() as {
      paths: Record<string, Record<string, { 'x-access': { scope: string }; responses: Record<string, unknown> }>>;
    };
    const wrong: string[] = [];
    for (const r of writes().filter((w) => !w.hidden)) {
      const op = doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()];
      const codes = (JSON.stringify(op?.responses['403']).match(/"enum":\[([^\]]*)\]/)?.[1] ?? '').split(',');
      if (op?.['x-access'].scope !== 'write' || codes[0] !== '"scope_forbidden"') wrong.push(`${label(r)}: ${op?.['x-access'].scope} ${codes.join(',')}`);
    }
    expect(wrong).toEqual([]);
  });

  it('still leaves the role check to unrestricted credentials: a member session deleting an eval rule is role_forbidden', async () => {
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const res = await ctx.app.inject({ method: 'DELETE', url: `/v1/eval-rules/${ZERO_ID}`, headers: member });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('role_forbidden');
  });
});

describe('assertRouteHasPolicy', () => {
  const route = (method: string, access?: AccessPolicy): RouteOptions =>
    ({ method, url: '/v1/x', handler: async () => ({}), config: access ? { access } : {} }) as unknown as RouteOptions;

  it('throws for a route without a policy', () => {
    expect(() => assertRouteHasPolicy(route('GET'))).toThrow(/declares no access policy/);
  });

  it('throws for a mutating route that is not scope write, or names no audit action', () => {
    expect(() => assertRouteHasPolicy(route('POST', { tokens: ANY_TOKEN, roles: WRITERS, scope: 'read', audit: 'x.y' }))).toThrow(
      /not scope 'write'/,
    );
    expect(() => assertRouteHasPolicy(route('DELETE', { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write' }))).toThrow(
      /names no audit action/,
    );
  });

  it('takes a read-only POST with audit false or an action, never without a word on audit, and read-only for no other method', () => {
    const search: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', readOnly: true, audit: false };
    expect(() => assertRouteHasPolicy(route('POST', search))).not.toThrow();
    expect(() => assertRouteHasPolicy(route('POST', { ...search, audit: 'x.y' }))).not.toThrow();
    const { audit: _audit, ...silent } = search;
    expect(() => assertRouteHasPolicy(route('POST', silent))).toThrow(/readOnly: POST only, with audit false or an action/);
    expect(() => assertRouteHasPolicy(route('PUT', search))).toThrow(/readOnly: POST only, with audit false or an action/);
  });

  it('accepts complete policies', () => {
    expect(() => assertRouteHasPolicy(route('GET', { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' }))).not.toThrow();
    expect(() => assertRouteHasPolicy(route('GET', PUBLIC))).not.toThrow();
    expect(() =>
      assertRouteHasPolicy(route('PATCH', { tokens: ANY_TOKEN, roles: WRITERS, scope: 'write', audit: 'x.update' })),
    ).not.toThrow();
  });

  it('makes app start-up fail when a plugin registers a route without a policy', async () => {
    const app = Fastify({ logger: false });
    app.addHook('onRoute', assertRouteHasPolicy);
    app.register(async (child) => {
      child.get('/v1/ok', { config: { access: { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read' } } }, async () => ({}));
      child.post('/v1/unguarded', async () => ({}));
    });
    await expect(app.ready()).rejects.toThrow(/POST \/v1\/unguarded declares no access policy/);
    await app.close().catch(() => {});
  });
});
