import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { me } from '../../src/modules/me/schemas.js';
import { apiKey } from '../../src/modules/apikeys/schemas.js';
import { createApiKey } from '../builders/resources.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const inject = (options: InjectOptions): Promise<LightMyRequestResponse> => ctx.app.inject(options);

const createKey = (headers: Record<string, string>, body: Record<string, unknown>) => createApiKey(ctx.app, headers, body);

function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(res.json().code).toBe(code);
  expect(res.json().request_id).toEqual(expect.any(String));
}

describe('authentication: 401', () => {
  let t: TestTenant;
  beforeAll(async () => {
    t = await createTenant(ctx.app);
  });

  it('refuses a request without Authorization', async () => {
    expectError(await inject({ method: 'GET', url: '/v1/projects' }), 401, 'unauthorized');
  });

  it.each([
    ['Basic scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['bare token without scheme', 'lt_abc'],
    ['scheme without token', 'Bearer'],
    ['two tokens', 'Bearer one two'],
    ['empty', ''],
  ])('refuses a malformed header (%s)', async (_label, authorization) => {
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: { authorization } }), 401, 'unauthorized');
  });

  it('refuses an unknown lt_ key', async () => {
    const unknown = 'lt_' + 'A'.repeat(40);
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(unknown) }), 401, 'unauthorized');
  });

  it('refuses a revoked key at once, in the same process that cached it as valid', async () => {
    const key = await createKey(t.auth, { name: 'to revoke' });
    expect((await inject({ method: 'GET', url: '/v1/projects', headers: bearer(key.secret) })).statusCode).toBe(200);
    const revoked = await inject({ method: 'DELETE', url: `/v1/apikeys/${key.id}`, headers: t.auth });
    expect(revoked.statusCode).toBe(200);
    expect(apiKey.parse(revoked.json()).revoked_at).not.toBeNull();
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(key.secret) }), 401, 'unauthorized');
    // The tenant's other key is untouched.
    expect((await inject({ method: 'GET', url: '/v1/projects', headers: t.auth })).statusCode).toBe(200);
  });

  it('refuses an expired session token', async () => {
    const expired = await sessionToken(t.tenantId, 'owner', { expiresIn: Math.floor(Date.now() / 1000) - 120 });
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(expired) }), 401, 'unauthorized');
  });

  it('refuses a session token signed with another secret', async () => {
    const forged = await sessionToken(t.tenantId, 'owner', { secret: 'not-the-service-secret-0123456789' });
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(forged) }), 401, 'unauthorized');
  });

  it('refuses a session token naming a tenant that does not exist', async () => {
    const token = await sessionToken(randomUUID(), 'owner');
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(token) }), 401, 'unauthorized');
  });

  it('refuses a session token with an unknown role or without tenant_id', async () => {
    const secret = new TextEncoder().encode(process.env.AUTH_JWT_SECRET!);
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('someone').setExpirationTime('1h').sign(secret);
    for (const claims of [{ tenant_id: t.tenantId, role: 'admin' }, { role: 'owner' }]) {
      const res = await inject({ method: 'GET', url: '/v1/projects', headers: bearer(await sign(claims)) });
      expectError(res, 401, 'unauthorized');
    }
  });

  it('refuses a session token whose claims Postgres cannot store (401, not 500)', async () => {
    const token = await sessionToken(t.tenantId, 'owner', { email: 'nul\u0000@example.test' });
    expectError(await inject({ method: 'GET', url: '/v1/projects', headers: bearer(token) }), 401, 'unauthorized');
  });

  it('accepts a valid session token', async () => {
    const res = await inject({ method: 'GET', url: '/v1/projects', headers: bearer(await sessionToken(t.tenantId, 'viewer')) });
    expect(res.statusCode).toBe(200);
  });
});

describe('dashboard-only routes', () => {
  it('GET /v1/me answers the session user and tenant, and refuses API keys with 403 session_required', async () => {
    const t = await createTenant(ctx.app, 'starter');
    const token = await sessionToken(t.tenantId, 'member', { email: 'ada@example.test' });
    const res = await inject({ method: 'GET', url: '/v1/me', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
    const body = me.parse(res.json());
    expect(body.user).toMatchObject({ email: 'ada@example.test', first_name: 'Test', last_name: 'member', role: 'member' });
    expect(body.tenant).toEqual({ id: t.tenantId, name: expect.any(String), plan: 'starter' });

    expectError(await inject({ method: 'GET', url: '/v1/me', headers: t.auth }), 403, 'session_required');
  });

  it('GET /v1/me answers each role', async () => {
    const t = await createTenant(ctx.app);
    for (const role of ['owner', 'member', 'viewer'] as const) {
      const res = await inject({ method: 'GET', url: '/v1/me', headers: bearer(await sessionToken(t.tenantId, role)) });
      expect(res.statusCode).toBe(200);
      expect(res.json().user.role).toBe(role);
    }
  });
});

describe('tenancy: another tenant is 404', () => {
  it("hides another tenant's project and API key", async () => {
    const a = await createTenant(ctx.app);
    const b = await createTenant(ctx.app);
    const aKey = await createKey(a.auth, { name: 'a-key' });

    expectError(await inject({ method: 'GET', url: `/v1/projects/${a.projectId}`, headers: b.auth }), 404, 'not_found');
    expectError(await inject({ method: 'DELETE', url: `/v1/apikeys/${aKey.id}`, headers: b.auth }), 404, 'not_found');
    const bOwner = bearer(await sessionToken(b.tenantId, 'owner'));
    expectError(await inject({ method: 'DELETE', url: `/v1/apikeys/${aKey.id}`, headers: bOwner }), 404, 'not_found');

    // A's key is still live and is not in B's listing.
    expect((await inject({ method: 'GET', url: '/v1/projects', headers: bearer(aKey.secret) })).statusCode).toBe(200);
    const bKeys = (await inject({ method: 'GET', url: '/v1/apikeys', headers: b.auth })).json() as { id: string }[];
    expect(bKeys.map((k) => k.id)).not.toContain(aKey.id);
  });

  it("refuses to make another tenant's project a key's default", async () => {
    const a = await createTenant(ctx.app);
    const b = await createTenant(ctx.app);
    const res = await inject({ method: 'POST', url: '/v1/apikeys', headers: b.auth, payload: { name: 'x', project_id: a.projectId } });
    expectError(res, 404, 'not_found');
  });
});

describe('scopes and roles', () => {
  it('a query-scoped key reads projects but cannot write or manage keys', async () => {
    const t = await createTenant(ctx.app);
    const scoped = await createKey(t.auth, { name: 'reader', scopes: ['query'] });
    expect(scoped.scopes).toEqual(['query']);
    const h = bearer(scoped.secret);

    expect((await inject({ method: 'GET', url: '/v1/projects', headers: h })).statusCode).toBe(200);
    expect((await inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: h })).statusCode).toBe(200);
    expectError(await inject({ method: 'POST', url: '/v1/projects', headers: h, payload: { name: 'x' } }), 403, 'scope_forbidden');
    expectError(
      await inject({ method: 'PATCH', url: `/v1/projects/${t.projectId}`, headers: h, payload: { name: 'x' } }),
      403,
      'scope_forbidden',
    );
    expectError(await inject({ method: 'GET', url: '/v1/apikeys', headers: h }), 403, 'scope_forbidden');
    expectError(await inject({ method: 'POST', url: '/v1/apikeys', headers: h, payload: { name: 'x' } }), 403, 'scope_forbidden');
    expectError(await inject({ method: 'DELETE', url: `/v1/apikeys/${scoped.id}`, headers: h }), 403, 'scope_forbidden');

    // Nothing was written by the refused calls.
    const projects = (await inject({ method: 'GET', url: '/v1/projects', headers: t.auth })).json().projects as { name: string }[];
    expect(projects.map((p) => p.name)).toEqual(['Default']);
  });

  it('a viewer session reads but cannot create or change (role_forbidden)', async () => {
    const t = await createTenant(ctx.app);
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect((await inject({ method: 'GET', url: '/v1/projects', headers: viewer })).statusCode).toBe(200);
    expect((await inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: viewer })).statusCode).toBe(200);
    expect((await inject({ method: 'GET', url: '/v1/apikeys', headers: viewer })).statusCode).toBe(200);
    expectError(await inject({ method: 'POST', url: '/v1/projects', headers: viewer, payload: { name: 'x' } }), 403, 'role_forbidden');
    expectError(
      await inject({ method: 'PATCH', url: `/v1/projects/${t.projectId}`, headers: viewer, payload: { name: 'x' } }),
      403,
      'role_forbidden',
    );
    expectError(await inject({ method: 'POST', url: '/v1/apikeys', headers: viewer, payload: { name: 'x' } }), 403, 'role_forbidden');
    const read = await inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: viewer });
    expect(read.json().name).toBe('Default');
  });
});
