import { createHash } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiKey } from '../../src/modules/apikeys/schemas.js';
import { me } from '../../src/modules/me/schemas.js';
import { createApiKey } from '../builders/resources.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const inject = (options: InjectOptions): Promise<LightMyRequestResponse> => ctx.app.inject(options);

const createKey = (headers: Record<string, string>, body: Record<string, unknown>) => createApiKey(ctx.app, headers, body);

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
