import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmConnectionRepository } from '../../src/modules/llm-connections/repo.js';
import { decryptSecret, encryptSecret } from '../../src/platform/crypto.js';
import { newId } from '../../src/platform/ids.js';
import { ProviderError } from '../../src/providers/types.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { queryKeyAuth } from '../builders/resources.js';

// No server-side vendor keys, whatever the machine's environment holds.
const NO_SERVER_KEYS = { OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' };
const TENANT_KEY = 'sk-tenant-secret-abcdef0123456789';

let ctx: TestContext;
let fake: FakeLlm;
beforeAll(async () => {
  [ctx, fake] = await Promise.all([startApp(NO_SERVER_KEYS), startFakeLlm()]);
});
afterAll(async () => {
  await Promise.all([ctx?.close(), fake?.close()]);
});

async function create(app: TestContext['app'], headers: Record<string, string>, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/v1/llm-connections', headers, payload });
}

const judgeRequest = { model: 'judge-model', system: 'Grade it.', prompt: 'Answer: 4' };

describe('llm connections API', () => {
  it('creates, lists, reads and deletes, never showing the key', async () => {
    const t = await createTenant(ctx.app);
    const created = await create(ctx.app, t.auth, { provider: 'openai', api_key: TENANT_KEY, default_model: 'gpt-4o-mini' });
    expect(created.statusCode).toBe(201);
    const connection = created.json();
    expect(connection).toMatchObject({
      provider: 'openai',
      name: 'openai',
      base_url: null,
      api_key_last4: '6789',
      default_model: 'gpt-4o-mini',
    });
    expect(connection.created_by).toMatch(/^apikey:/);
    expect(created.body).not.toContain(TENANT_KEY);
    expect(connection).not.toHaveProperty('api_key');

    const [row] = await ctx.stores.sql<{ api_key_ciphertext: string }[]>`
      select api_key_ciphertext from llm_connections where id = ${connection.id}`;
    expect(row!.api_key_ciphertext).not.toContain(TENANT_KEY);
    expect(decryptSecret(ctx.stores.config.secretKey, row!.api_key_ciphertext)).toBe(TENANT_KEY);

    const second = (await create(ctx.app, t.auth, { provider: 'anthropic', name: 'claude', api_key: 'sk-ant-wxyz' })).json();
    const page1 = await ctx.app.inject({ method: 'GET', url: '/v1/llm-connections?limit=1', headers: t.auth });
    expect(page1.statusCode).toBe(200);
    expect(page1.json()).toMatchObject({ llm_connections: [{ id: connection.id }], has_more: true });
    const page2 = await ctx.app.inject({ method: 'GET', url: `/v1/llm-connections?limit=1&cursor=${page1.json().next_cursor}`, headers: t.auth });
    expect(page2.json()).toMatchObject({ llm_connections: [{ id: second.id, name: 'claude', api_key_last4: 'wxyz' }], has_more: false });
    expect(page1.body + page2.body).not.toContain(TENANT_KEY);

    const read = await ctx.app.inject({ method: 'GET', url: `/v1/llm-connections/${connection.id}`, headers: t.auth });
    expect(read.json()).toEqual(connection);

    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `/v1/llm-connections/${connection.id}`, headers: owner });
    expect(deleted.statusCode).toBe(204);
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/llm-connections/${connection.id}`, headers: t.auth })).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/llm-connections/${connection.id}`, headers: owner })).statusCode).toBe(404);
  });

  it.each([
    ['http://api.example.com/v1', 'llm_connection.url.not_https'],
    ['https://127.0.0.1/v1', 'llm_connection.url.private_ip'],
    ['https://10.0.0.1/v1', 'llm_connection.url.private_ip'],
    ['https://[::ffff:169.254.169.254]/', 'llm_connection.url.private_ip'],
    ['https://localhost/v1', 'llm_connection.url.private_ip'],
    ['https://nonexistent.invalid/v1', 'llm_connection.url.unresolvable'],
  ])('refuses base_url %s with 422 %s', async (baseUrl, code) => {
    const t = await createTenant(ctx.app);
    const res = await create(ctx.app, t.auth, { provider: 'openai', api_key: TENANT_KEY, base_url: baseUrl });
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe(code);
    const list = await ctx.app.inject({ method: 'GET', url: '/v1/llm-connections', headers: t.auth });
    expect(list.json().llm_connections).toEqual([]);
  });

  it('refuses credentials inside base_url and unknown providers as 400', async () => {
    const t = await createTenant(ctx.app);
    const inUrl = await create(ctx.app, t.auth, { provider: 'openai', api_key: TENANT_KEY, base_url: 'https://user:pw@api.example.com/' });
    expect(inUrl.statusCode).toBe(400);
    expect((await create(ctx.app, t.auth, { provider: 'cohere', api_key: TENANT_KEY })).statusCode).toBe(400);
    expect((await create(ctx.app, t.auth, { provider: 'openai' })).statusCode).toBe(422);
  });

  it('lets members create, viewers only read, and only owners delete', async () => {
    const t = await createTenant(ctx.app);
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const created = await create(ctx.app, member, { provider: 'anthropic', api_key: 'sk-ant-1234' });
    expect(created.statusCode).toBe(201);
    expect(created.json().created_by).toMatch(/^user:/);
    const id = created.json().id;

    const byViewer = await create(ctx.app, viewer, { provider: 'openai', api_key: TENANT_KEY });
    expect(byViewer.statusCode).toBe(403);
    expect(byViewer.json().code).toBe('role_forbidden');
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/llm-connections', headers: viewer })).statusCode).toBe(200);

    for (const headers of [member, t.auth]) {
      const res = await ctx.app.inject({ method: 'DELETE', url: `/v1/llm-connections/${id}`, headers });
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('role_forbidden');
    }
  });

  it('refuses query-scoped keys, which cannot read credentials', async () => {
    const t = await createTenant(ctx.app);
    const reader = await queryKeyAuth(ctx.app, t.auth);
    const res = await ctx.app.inject({ method: 'GET', url: '/v1/llm-connections', headers: reader });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('scope_forbidden');
    expect((await create(ctx.app, reader, { provider: 'openai', api_key: TENANT_KEY })).statusCode).toBe(403);
  });

  it("answers 404 for another tenant's connection", async () => {
    const a = await createTenant(ctx.app);
    const b = await createTenant(ctx.app);
    const id = (await create(ctx.app, a.auth, { provider: 'openai', api_key: TENANT_KEY })).json().id;
    const ownerB = bearer(await sessionToken(b.tenantId, 'owner'));
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/llm-connections/${id}`, headers: b.auth })).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/llm-connections/${id}`, headers: ownerB })).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/llm-connections', headers: b.auth })).json().llm_connections).toEqual([]);
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/llm-connections/${id}`, headers: a.auth })).statusCode).toBe(200);
  });

  it('documents the routes with their error codes in the OpenAPI document', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/v1/openapi.json', headers: (await createTenant(ctx.app)).auth })).json();
    const post = doc.paths['/v1/llm-connections'].post;
    expect(post.responses['422'].content['application/json'].schema.allOf[1].properties.code.enum).toEqual(
      expect.arrayContaining(['llm_connection.url.not_https', 'llm_connection.url.private_ip', 'llm_connection.url.unresolvable']),
    );
    expect(doc.paths['/v1/llm-connections'].get['x-access']).toMatchObject({ scope: 'admin' });
    expect(doc.paths['/v1/llm-connections/{id}'].delete['x-access']).toMatchObject({ roles: ['owner'] });
  });
});

describe('resolving the provider of a tenant', () => {
  let open: TestContext;
  beforeAll(async () => {
    // The fake vendor listens on loopback: only the operator's opt-out admits it as a tenant URL.
    open = await startApp({
      ...NO_SERVER_KEYS,
      LOOPTRACE_ALLOW_PRIVATE_PROVIDER_URLS: 'true',
      OPENAI_API_KEY: 'sk-server-key',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      LOOPTRACE_EMBEDDING_MODEL: 'embed-small',
      LOOPTRACE_PROVIDER_MAX_RETRIES: '0',
    });
  });
  afterAll(async () => open?.close());

  const lastAuthorization = () => fake.requests.at(-1)?.headers.authorization;

  it("uses the tenant's newest connection, with its decrypted key", async () => {
    const t: TestTenant = await createTenant(open.app);
    await create(open.app, t.auth, { provider: 'openai', api_key: 'sk-older-key', base_url: `${fake.url}/v1` });
    const res = await create(open.app, t.auth, { provider: 'openai', api_key: TENANT_KEY, base_url: `${fake.url}/v1`, default_model: 'tenant-model' });
    expect(res.statusCode).toBe(201);

    const resolved = await open.app.services.llmConnections.resolve(t.tenantId, 'openai');
    expect(resolved).toMatchObject({ source: 'tenant', defaultModel: 'tenant-model' });
    const result = await resolved.provider.judge(judgeRequest);
    expect(result.verdict.passed).toBe(true);
    expect(lastAuthorization()).toBe(`Bearer ${TENANT_KEY}`);

    const embedder = await open.app.services.llmConnections.resolveEmbedder(t.tenantId);
    expect(embedder?.model).toBe('embed-small');
    expect((await embedder!.provider.embed(embedder!.model, ['hello'])).vectors).toHaveLength(1);
    expect(lastAuthorization()).toBe(`Bearer ${TENANT_KEY}`);
  });

  it("falls back to the server's credentials from the environment", async () => {
    const t = await createTenant(open.app);
    const resolved = await open.app.services.llmConnections.resolve(t.tenantId, 'openai');
    expect(resolved).toMatchObject({ source: 'server', defaultModel: null });
    await resolved.provider.judge(judgeRequest);
    expect(lastAuthorization()).toBe('Bearer sk-server-key');
    expect((await open.app.services.llmConnections.resolveEmbedder(t.tenantId))?.model).toBe('embed-small');
  });

  it('throws auth when neither the tenant nor the server has credentials', async () => {
    const t = await createTenant(open.app);
    const err = await open.app.services.llmConnections.resolve(t.tenantId, 'anthropic').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ failure: 'auth' });
    expect((err as Error).message).toContain('ANTHROPIC_API_KEY');

    const bare = await createTenant(ctx.app);
    const openaiErr = await ctx.app.services.llmConnections.resolve(bare.tenantId, 'openai').catch((e: unknown) => e);
    expect(openaiErr).toMatchObject({
      failure: 'auth',
      message: 'no openai credentials: add an LLM connection (POST /v1/llm-connections) or set OPENAI_API_KEY',
    });
    expect(await ctx.app.services.llmConnections.resolveEmbedder(bare.tenantId)).toBeNull();
  });

  it('guards a stored tenant URL again at call time', async () => {
    // A row written before its URL turned private (or by hand): the call itself is refused.
    const t = await createTenant(ctx.app);
    await llmConnectionRepository(ctx.stores.sql).insert(t.tenantId, {
      id: newId(),
      provider: 'openai',
      name: 'stale',
      base_url: `${fake.url}/v1`,
      api_key_ciphertext: encryptSecret(ctx.stores.config.secretKey, TENANT_KEY),
      api_key_last4: '6789',
      default_model: null,
      created_by: null,
    });
    const before = fake.requests.length;
    const resolved = await ctx.app.services.llmConnections.resolve(t.tenantId, 'openai');
    const err = await resolved.provider.judge(judgeRequest).catch((e: unknown) => e);
    expect(err).toMatchObject({ failure: 'blocked_url' });
    expect(fake.requests.length).toBe(before);
  });
});
