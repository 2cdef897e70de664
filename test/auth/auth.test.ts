import { createHash, randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { me } from '../../src/modules/me/schemas.js';
import { apiKey, createdApiKey } from '../../src/modules/apikeys/schemas.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const inject = (options: InjectOptions): Promise<LightMyRequestResponse> => ctx.app.inject(options);

async function createKey(headers: Record<string, string>, body: Record<string, unknown> = { name: 'k' }) {
  const res = await inject({ method: 'POST', url: '/v1/apikeys', headers, payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return createdApiKey.parse(res.json());
}

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

describe('API keys', () => {
  it('records the session user who created a key, and null for keys created with a key', async () => {
    const t = await createTenant(ctx.app);
    const owner = bearer(
      await sessionToken(t.tenantId, 'owner', { sub: `grace-${t.tenantId}`, email: 'grace@example.test' }),
    );
    const userId = me.parse((await inject({ method: 'GET', url: '/v1/me', headers: owner })).json()).user.id;
    const bySession = await createKey(owner, { name: 'by session' });
    const byKey = await createKey(t.auth, { name: 'by key' });

    const list = await inject({ method: 'GET', url: '/v1/apikeys', headers: t.auth });
    expect(list.statusCode).toBe(200);
    const keys = apiKey.array().parse(list.json());
    expect(keys.find((k) => k.id === bySession.id)).toMatchObject({
      name: 'by session',
      created_by_user_id: userId,
      created_by_email: 'grace@example.test',
      created_by_first_name: 'Test',
      created_by_last_name: 'owner',
    });
    expect(keys.find((k) => k.id === byKey.id)).toMatchObject({
      name: 'by key',
      created_by_user_id: null,
      created_by_email: null,
      created_by_first_name: null,
      created_by_last_name: null,
    });
  });

  it('returns the secret once, never lists it, and stores only a hash', async () => {
    const t = await createTenant(ctx.app);
    const created = await createKey(t.auth, { name: 'once' });
    expect(created.secret).toMatch(/^lt_[0-9A-Za-z]{40}$/);
    expect(created.prefix).toBe(created.secret.slice(0, 12));

    const list = await inject({ method: 'GET', url: '/v1/apikeys', headers: t.auth });
    expect(list.body).not.toContain(created.secret);
    expect(list.body).not.toContain(created.secret.slice(12));
    const listed = (list.json() as Record<string, unknown>[]).find((k) => k.id === created.id)!;
    expect(listed).toBeDefined();
    expect(Object.keys(listed)).not.toContain('secret');
    expect(Object.keys(listed)).not.toContain('key_hash');

    const revoked = await inject({ method: 'DELETE', url: `/v1/apikeys/${created.id}`, headers: t.auth });
    expect(revoked.body).not.toContain(created.secret.slice(12));

    const [row] = await ctx.stores.sql<{ key_hash: Buffer }[]>`select key_hash from api_keys where id = ${created.id}`;
    const stored = row!.key_hash;
    expect(Buffer.isBuffer(stored)).toBe(true);
    expect(stored.equals(Buffer.from(created.secret))).toBe(false);
    expect(stored.toString('latin1')).not.toContain(created.secret.slice(12));
    expect(stored.toString('hex')).not.toContain(Buffer.from(created.secret).toString('hex'));
    expect(stored.equals(createHash('sha256').update(created.secret).digest())).toBe(true);
  });

  it('sets last_used_at once the key is used', async () => {
    const t = await createTenant(ctx.app);
    const created = await createKey(t.auth, { name: 'fresh' });
    const lastUsed = async () => {
      const keys = apiKey.array().parse((await inject({ method: 'GET', url: '/v1/apikeys', headers: t.auth })).json());
      return keys.find((k) => k.id === created.id)!.last_used_at;
    };
    expect(await lastUsed()).toBeNull();
    expect((await inject({ method: 'GET', url: '/v1/projects', headers: bearer(created.secret) })).statusCode).toBe(200);
    // The write is deliberately off the request path; wait for it rather than for a clock.
    await vi.waitFor(async () => expect(await lastUsed()).not.toBeNull(), { timeout: 10_000, interval: 25 });
    expect(Date.parse((await lastUsed())!)).toBeGreaterThanOrEqual(Date.parse(created.created_at));
  });
});
