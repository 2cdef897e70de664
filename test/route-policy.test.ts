import Fastify, { type RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROLES, ANY_TOKEN, PUBLIC, WRITERS, assertRouteHasPolicy, type AccessPolicy } from '../src/platform/access.js';
import type { TestContext } from './helpers/app.js';
import { MUTATING_METHODS, startAppWithRoutes, type RegisteredRoute } from './helpers/routes.js';

/**
 * The only routes reachable without a credential (DESIGN.md §3, §7; spec Authentication rule 1),
 * the web dashboard's files and sign-in (how a browser gets a session) among them.
 */
const PUBLIC_ALLOWLIST = new Set([
  '/healthz', '/readyz', '/metrics', '/v1/openapi.json', '/v1/audit/verify', '/v1/audit/public-key', '/v1/deprecations',
  '/', '/assets/*', '/*', '/v1/auth/config', '/v1/auth/dev-tenants', '/v1/auth/dev-session',
]);
/** Public POSTs: the development sign-in mints a token and stores nothing (refused in production). */
const PUBLIC_WRITES = new Set(['POST /v1/auth/dev-session']);

let ctx: TestContext;
let routes: RegisteredRoute[];
beforeAll(async () => {
  ({ ctx, routes } = await startAppWithRoutes());
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

  it('is read-only only as a POST that audits nothing, and only where the query cannot be a URL', () => {
    const readOnly = routes.filter((r) => r.access?.readOnly);
    expect(readOnly.map(label)).toEqual(['POST /v1/search/spans']);
    expect(readOnly.filter((r) => r.access?.audit !== false).map(label)).toEqual([]);
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
      const url = r.url.replace(/:([A-Za-z0-9_]+)/g, '00000000-0000-4000-8000-000000000000');
      const res = await ctx.app.inject({ method: r.method as 'GET', url, ...(MUTATING_METHODS.has(r.method) ? { payload: {} } : {}) });
      expect(res.statusCode, label(r)).toBe(401);
    }
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

  it('takes a read-only POST only with audit false, and read-only for no other method', () => {
    const search: AccessPolicy = { tokens: ANY_TOKEN, roles: ALL_ROLES, scope: 'read', readOnly: true, audit: false };
    expect(() => assertRouteHasPolicy(route('POST', search))).not.toThrow();
    expect(() => assertRouteHasPolicy(route('POST', { ...search, audit: 'x.y' }))).toThrow(/readOnly: POST only, with audit false/);
    expect(() => assertRouteHasPolicy(route('PUT', search))).toThrow(/readOnly: POST only, with audit false/);
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
