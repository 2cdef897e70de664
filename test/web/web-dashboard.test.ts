import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderWebApi, WEB_API_DIR } from '../../scripts/web-api.js';
import Fastify from 'fastify';
import { loadConfig } from '../../src/config.js';
import { webRoutes } from '../../src/modules/web/routes.js';
import { authConfig, devSession, devTenantList } from '../../src/modules/auth/schemas.js';
import { bearer, createTenant, type TestContext } from '../helpers/app.js';
import { startApp } from '../helpers/app.js';
import { ensureWebBuilt } from '../helpers/web.js';

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('the dashboard served by the API (development)', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ensureWebBuilt();
    ctx = await startApp();
  });
  afterAll(async () => ctx?.close());

  const get = (url: string, headers: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, headers });

  it('serves index.html at / and, for page loads, at any path outside /v1/ (SPA fallback), never cached, with a CSP', async () => {
    for (const url of ['/', '/traces', '/traces/0192f000-0000-7000-8000-000000000000?x=1', '/sign-in']) {
      const res = await get(url, url === '/' ? {} : HTML);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toMatch(/^text\/html/);
      expect(res.body, url).toContain('<div id="root"></div>');
      expect(res.headers['cache-control'], url).toBe('no-cache');
      expect(res.headers['content-security-policy'], url).toContain("script-src 'self'");
    }
  });

  it('leaves the API as it was: unknown /v1/ paths and non-page requests are the JSON 404, operations routes answer JSON', async () => {
    for (const [url, headers] of [['/v1/nope', HTML], ['/v1', HTML], ['/traces', {}], ['/traces', { accept: 'application/json' }]] as const) {
      const res = await get(url, headers);
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toMatchObject({ code: 'not_found' });
    }
    const health = await get('/healthz', HTML);
    expect(health.json()).toEqual({ status: 'ok' });
    const doc = await get('/v1/openapi.json', { ...HTML, ...(await createTenant(ctx.app)).auth });
    expect(doc.headers['content-type']).toMatch(/^application\/json/);
    // The sign-in endpoints beside the pages answer JSON to a browser too; /auth/callback stays a page.
    expect((await get('/auth/config', HTML)).headers['content-type']).toMatch(/^application\/json/);
    expect((await get('/auth/callback?code=x', HTML)).body).toContain('<div id="root"></div>');
  });

  it('serves the metrics page to a browser reloading /metrics, and the Prometheus exposition to a scraper', async () => {
    const page = await get('/metrics', HTML);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<div id="root"></div>');
    for (const headers of [{}, { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' }] as Record<string, string>[]) {
      const scrape = await get('/metrics', headers);
      expect(scrape.statusCode).toBe(200);
      expect(scrape.headers['content-type']).toMatch(/^text\/plain/);
      expect(scrape.body).toContain('# HELP');
    }
  });

  it('serves the hashed bundles for a year and answers a missing one with the JSON 404', async () => {
    const index = (await get('/')).body;
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(index)?.[1];
    expect(script).toBeDefined();
    const res = await get(script!);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const missing = await get('/assets/nope.js');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'not_found' });
    expect((await get('/assets/../../package.json')).statusCode).toBe(404);
  });

  it("serves React's production build even when built by a test run (NODE_ENV=test would give the development one)", async () => {
    const index = (await get('/')).body;
    const script = (await get(/src="(\/assets\/[^"]+\.js)"/.exec(index)![1]!)).body;
    // Production React replaces its messages with error codes; the development build spells them out.
    expect(script).toContain('Minified React error');
  });

  const openApi = async () => (await get('/v1/openapi.json', (await createTenant(ctx.app)).auth)).json();

  it('keeps the static routes out of the OpenAPI document and documents the sign-in endpoints, outside /v1/', async () => {
    const doc = (await openApi()) as { paths: Record<string, unknown> };
    const signIn = ['/auth/config', '/auth/dev-tenants', '/auth/dev-session'];
    const beside = ['/healthz', '/readyz', '/audit/public-key', ...signIn];
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/') && !beside.includes(p))).toEqual([]);
    for (const p of signIn) expect(doc.paths[p], p).toBeDefined();
    for (const p of ['/v1/auth/config', '/v1/auth/dev-tenants', '/v1/auth/dev-session']) expect(doc.paths[p], p).toBeUndefined();
  });

  it('has client types (web/src/api) generated from this very document: run `npm run web:types` after changing the API', async () => {
    const generated = await renderWebApi(await openApi());
    expect(readFileSync(path.join(WEB_API_DIR, 'access.ts'), 'utf8')).toBe(generated.access);
    expect(readFileSync(path.join(WEB_API_DIR, 'schema.d.ts'), 'utf8') === generated.schema).toBe(true);
  });

  it('says how to sign in, without a credential and outside /v1/: no identity provider configured, development sign-in on', async () => {
    const res = await get('/auth/config');
    expect(res.statusCode).toBe(200);
    expect(authConfig.parse(res.json())).toEqual({ oidc: null, dev_sign_in: true });
    // Not under /v1/ any more, where every request but the audit verification carries a token
    // (spec, Authentication rule 1): the old path is an unknown one.
    expect((await get('/v1/auth/config')).statusCode).toBe(404);
  });

  it('mints a development session for a tenant and role, which the API then takes as that role', async () => {
    const t = await createTenant(ctx.app, 'team');
    const tenants = devTenantList.parse((await get('/auth/dev-tenants?limit=1000')).json());
    expect(tenants.tenants.map((x) => x.id)).toContain(t.tenantId);
    expect(tenants.tenants.find((x) => x.id === t.tenantId)?.plan).toBe('team');

    const res = await ctx.app.inject({ method: 'POST', url: '/auth/dev-session', payload: { tenant_id: t.tenantId, role: 'viewer' } });
    expect(res.statusCode, res.body).toBe(201);
    const minted = devSession.parse(res.json());
    expect(Date.parse(minted.expires_at) - Date.now()).toBeGreaterThan(7 * 3600_000);
    const me = await get('/v1/me', bearer(minted.token));
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json()).toMatchObject({ user: { role: 'viewer' }, tenant: { id: t.tenantId, plan: 'team' } });
  });

  it('pages the tenants with the keyset cursor', async () => {
    await createTenant(ctx.app);
    await createTenant(ctx.app);
    const first = devTenantList.parse((await get('/auth/dev-tenants?limit=1')).json());
    expect(first.has_more).toBe(true);
    const second = devTenantList.parse((await get(`/auth/dev-tenants?limit=1&cursor=${first.next_cursor}`)).json());
    expect(second.tenants[0]!.id < first.tenants[0]!.id).toBe(true);
  });

  it('refuses a development session for an unknown tenant (404) or a role that does not exist (400)', async () => {
    const unknown = await ctx.app.inject({
      method: 'POST',
      url: '/auth/dev-session',
      payload: { tenant_id: '0192f000-0000-7000-8000-000000000000', role: 'owner' },
    });
    expect(unknown.statusCode).toBe(404);
    const t = await createTenant(ctx.app);
    const badRole = await ctx.app.inject({ method: 'POST', url: '/auth/dev-session', payload: { tenant_id: t.tenantId, role: 'admin' } });
    expect(badRole.statusCode).toBe(400);
  });
});

describe.each([
  ['in production', { NODE_ENV: 'production' }],
  ['where sessions come from an identity provider (AUTH_JWKS_URL)', {
    AUTH_JWKS_URL: 'http://127.0.0.1:9/jwks',
    AUTH_OIDC_ISSUER: 'https://idp.example.test/realms/acme',
    AUTH_OIDC_CLIENT_ID: 'looptrace-dashboard',
  }],
])('development sign-in %s', (_label, env: Record<string, string>) => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await startApp(env);
  });
  afterAll(async () => ctx?.close());

  it('is off: the config says so, and the development routes are not there at all (404 like any unknown path)', async () => {
    const config = authConfig.parse((await ctx.app.inject({ method: 'GET', url: '/auth/config' })).json());
    expect(config.dev_sign_in).toBe(false);
    if (env.AUTH_OIDC_ISSUER) {
      expect(config.oidc).toEqual({ issuer: env.AUTH_OIDC_ISSUER, client_id: 'looptrace-dashboard', scopes: 'openid profile email' });
    }
    const t = await createTenant(ctx.app);
    for (const url of ['/auth/dev-session', '/v1/auth/dev-session']) {
      expect(ctx.app.hasRoute({ method: 'POST', url }), url).toBe(false);
      const minted = await ctx.app.inject({ method: 'POST', url, payload: { tenant_id: t.tenantId, role: 'owner' } });
      expect(minted.statusCode, url).toBe(404);
      expect(minted.json()).toMatchObject({ code: 'not_found' });
      expect(minted.body).not.toContain('token');
      // No validation runs first to give the route away: an empty body is the same 404.
      const empty = await ctx.app.inject({ method: 'POST', url, payload: {} });
      expect(empty.statusCode, url).toBe(404);
      const unknown = await ctx.app.inject({ method: 'POST', url: '/auth/no-such-route', payload: {} });
      expect({ ...empty.json(), request_id: null }, url).toEqual({ ...unknown.json(), error: expect.any(String), request_id: null });
    }
    expect(ctx.app.hasRoute({ method: 'GET', url: '/auth/dev-tenants' })).toBe(false);
    expect((await ctx.app.inject({ method: 'GET', url: '/auth/dev-tenants' })).statusCode).toBe(404);
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: t.auth })).json();
    expect(Object.keys(doc.paths).filter((p) => p.includes('dev-'))).toEqual([]);
  });
});

describe('dashboard sign-in configuration', () => {
  const config = (env: Record<string, string>) => loadConfig({ ...process.env, ...env });

  it('takes the identity provider as issuer and client id together, and refuses half of it', () => {
    expect(() => config({ AUTH_OIDC_ISSUER: 'https://idp.example.test' })).toThrow(/set together/);
    expect(() => config({ AUTH_OIDC_CLIENT_ID: 'dash' })).toThrow(/set together/);
    expect(() => config({ AUTH_OIDC_ISSUER: 'not a url', AUTH_OIDC_CLIENT_ID: 'dash' })).toThrow(/must be a URL/);
    expect(config({ AUTH_OIDC_ISSUER: 'https://idp.example.test', AUTH_OIDC_CLIENT_ID: 'dash', AUTH_OIDC_SCOPES: 'openid looptrace' }).auth.oidc).toEqual({
      issuer: 'https://idp.example.test',
      clientId: 'dash',
      scopes: 'openid looptrace',
    });
  });

  it('turns development sessions on only outside production and without a JWKS URL', () => {
    expect(config({}).auth.devSessions).toBe(true);
    expect(config({ NODE_ENV: 'production' }).auth.devSessions).toBe(false);
    expect(config({ AUTH_JWKS_URL: 'https://idp.example.test/jwks' }).auth.devSessions).toBe(false);
  });
});

describe('an API whose dashboard is not built', () => {
  it('still starts, and answers page requests with a 404 instead of failing', async () => {
    const app = Fastify({ logger: false });
    await app.register(webRoutes(loadConfig(process.env).auth, path.join(import.meta.dirname, 'no-such-dist')));
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/traces', headers: HTML })).statusCode).toBe(404);
    await app.close();
  });
});
