import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhook, webhookList, deliveryList, webhookTestResult } from '../../src/modules/webhooks/schemas.js';
import { decryptSecret } from '../../src/platform/crypto.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { HttpsReceiver, makeTestCa, trustInThisProcess } from '../helpers/https-receiver.js';
import { freePort } from '../helpers/server-process.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import type { Workers } from '../../src/jobs/workers.js';

const SECRET = 'whsec-test-0123456789abcdef';
const ca = makeTestCa();
trustInThisProcess(ca);

// `local` admits loopback receivers (LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK) and runs the delivery
// workers; `strict` is the production default. Both share this process's database.
let local: TestContext;
let strict: TestContext;
let workers: Workers;
let receiver: HttpsReceiver;

beforeAll(async () => {
  local = await startApp({ LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true', REDIS_PREFIX: TEST_REDIS_PREFIX });
  strict = await startApp();
  workers = await startTestWorkers(local, ['webhooks', 'webhooks-reconcile']);
  receiver = await HttpsReceiver.start(ca, (req) => {
    if (req.path.startsWith('/big')) return { status: 201, body: 'b'.repeat(10_000) };
    if (req.path.startsWith('/moved')) return { status: 302, headers: { location: 'https://127.0.0.1/elsewhere' } };
    return { status: 200, body: 'thanks' };
  });
});
afterAll(async () => {
  await workers?.close();
  await Promise.all([local?.close(), strict?.close(), receiver?.close()]);
});

type Headers = Record<string, string>;
const inject = (ctx: TestContext, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: object) =>
  ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

async function createWebhook(t: TestTenant, body: Record<string, unknown> = {}, ctx = local) {
  const res = await inject(ctx, 'POST', '/v1/webhooks', t.auth, { url: receiver.url('/hook'), secret: SECRET, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return webhook.parse(res.json());
}

describe('webhooks API', () => {
  it('creates, lists, reads, updates and deletes, never showing the secret', async () => {
    const t = await createTenant(local.app);
    const created = await createWebhook(t);
    expect(created).toMatchObject({ url: receiver.url('/hook'), events: ['failure.detected'], enabled: true });
    expect(created.created_by).toMatch(/^apikey:/);
    const [row] = await local.stores.sql<{ secret_ciphertext: string }[]>`select secret_ciphertext from webhooks where id = ${created.id}`;
    expect(row!.secret_ciphertext).not.toContain(SECRET);
    expect(decryptSecret(local.stores.config.secretKey, row!.secret_ciphertext)).toBe(SECRET);

    const second = await createWebhook(t, { events: ['anomaly.detected', 'failure.detected', 'anomaly.detected'], enabled: false });
    expect(second).toMatchObject({ events: ['anomaly.detected', 'failure.detected'], enabled: false });
    const page1 = await inject(local, 'GET', '/v1/webhooks?limit=1', t.auth);
    expect(webhookList.parse(page1.json())).toMatchObject({ webhooks: [{ id: created.id }], has_more: true });
    const page2 = await inject(local, 'GET', `/v1/webhooks?limit=1&cursor=${page1.json().next_cursor}`, t.auth);
    expect(page2.json()).toMatchObject({ webhooks: [{ id: second.id }], has_more: false, next_cursor: null });
    expect((await inject(local, 'GET', `/v1/webhooks/${created.id}`, t.auth)).json()).toEqual(created);

    const patched = await inject(local, 'PATCH', `/v1/webhooks/${created.id}`, t.auth, { enabled: false, events: ['anomaly.detected'], secret: 'rotated-secret-0123456789' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ id: created.id, url: created.url, enabled: false, events: ['anomaly.detected'] });
    const [rotated] = await local.stores.sql<{ secret_ciphertext: string }[]>`select secret_ciphertext from webhooks where id = ${created.id}`;
    expect(decryptSecret(local.stores.config.secretKey, rotated!.secret_ciphertext)).toBe('rotated-secret-0123456789');
    const badUrl = await inject(local, 'PATCH', `/v1/webhooks/${created.id}`, t.auth, { url: 'http://example.com/hook' });
    expect(badUrl.statusCode).toBe(422);
    expect(badUrl.json().code).toBe('webhook.url.not_https');

    const bodies = [page1.body, page2.body, patched.body].join();
    expect(bodies).not.toContain(SECRET);
    expect(bodies).not.toContain('rotated-secret');

    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    expect((await inject(local, 'DELETE', `/v1/webhooks/${created.id}`, owner)).statusCode).toBe(204);
    expect((await inject(local, 'GET', `/v1/webhooks/${created.id}`, t.auth)).statusCode).toBe(404);
    expect((await inject(local, 'DELETE', `/v1/webhooks/${created.id}`, owner)).statusCode).toBe(404);
  });

  it('refuses short secrets, unknown events, credentials in the URL and empty event lists', async () => {
    const t = await createTenant(local.app);
    for (const body of [{ secret: 'too-short' }, { events: ['ping'] }, { events: [] }, { url: `https://u:p@127.0.0.1:${receiver.port}/` }]) {
      const res = await inject(local, 'POST', '/v1/webhooks', t.auth, { url: receiver.url(), secret: SECRET, ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await inject(local, 'POST', '/v1/webhooks', t.auth, { url: receiver.url() })).statusCode).toBe(422);
  });

  it.each([
    ['http://example.com/hook', 'webhook.url.not_https'],
    ['ftp://example.com/hook', 'webhook.url.not_https'],
    ['https://127.0.0.1/hook', 'webhook.url.private_ip'],
    ['https://localhost/hook', 'webhook.url.private_ip'],
    ['https://10.1.2.3/hook', 'webhook.url.private_ip'],
    ['https://[::ffff:7f00:1]/hook', 'webhook.url.private_ip'],
    ['https://169.254.169.254/latest', 'webhook.url.private_ip'],
    ['https://nonexistent.invalid/hook', 'webhook.url.unresolvable'],
  ])('refuses %s with 422 %s', async (url, code) => {
    const t = await createTenant(strict.app);
    const res = await inject(strict, 'POST', '/v1/webhooks', t.auth, { url, secret: SECRET });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ code, error: expect.stringMatching(/^url: /) });
    expect((await inject(strict, 'GET', '/v1/webhooks', t.auth)).json().webhooks).toEqual([]);
  });

  it('is Pro and above: Starter gets 402, and 403 on the test endpoint; deletion stays possible', async () => {
    const t = await createTenant(local.app);
    const id = (await createWebhook(t)).id;
    await local.app.services.tenants.setPlan(t.tenantId, 'starter');
    for (const [method, url, payload] of [
      ['POST', '/v1/webhooks', { url: receiver.url(), secret: SECRET }],
      ['GET', '/v1/webhooks', undefined],
      ['GET', `/v1/webhooks/${id}/deliveries`, undefined],
      ['PATCH', `/v1/webhooks/${id}`, { enabled: false }],
    ] as const) {
      const res = await inject(local, method, url, t.auth, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(402);
      expect(res.json()).toMatchObject({ code: 'plan_upgrade_required', required_plan: 'pro' });
    }
    const tested = await inject(local, 'POST', `/v1/webhooks/${id}/test`, t.auth);
    expect(tested.statusCode).toBe(403);
    expect(tested.json()).toMatchObject({ code: 'plan_upgrade_required', required_plan: 'pro' });
    expect(receiver.requests.filter((r) => r.headers['x-service-event-id'] && r.rawBody.includes(id))).toEqual([]);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    expect((await inject(local, 'DELETE', `/v1/webhooks/${id}`, owner)).statusCode).toBe(204);
  });

  it('lets members write, viewers only read, only owners delete; query keys are refused', async () => {
    const t = await createTenant(local.app);
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    const id = (await createWebhook(t, {}, local)).id;
    expect((await inject(local, 'POST', '/v1/webhooks', member, { url: receiver.url(), secret: SECRET })).statusCode).toBe(201);

    for (const [method, url] of [['POST', '/v1/webhooks'], ['PATCH', `/v1/webhooks/${id}`], ['POST', `/v1/webhooks/${id}/test`], ['DELETE', `/v1/webhooks/${id}`]] as const) {
      const res = await inject(local, method, url, viewer, method === 'DELETE' || url.endsWith('/test') ? undefined : { url: receiver.url(), secret: SECRET });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().code).toBe('role_forbidden');
    }
    expect((await inject(local, 'GET', '/v1/webhooks', viewer)).json().webhooks).toHaveLength(2);
    expect((await inject(local, 'GET', `/v1/webhooks/${id}/deliveries`, viewer)).statusCode).toBe(200);
    for (const headers of [member, t.auth]) {
      const res = await inject(local, 'DELETE', `/v1/webhooks/${id}`, headers);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('role_forbidden');
    }

    const key = await inject(local, 'POST', '/v1/apikeys', t.auth, { name: 'reader', scopes: ['query'] });
    const reader = bearer(key.json().secret);
    expect((await inject(local, 'GET', '/v1/webhooks', reader)).json().code).toBe('scope_forbidden');
  });

  it("answers 404 for another tenant's webhook on every route", async () => {
    const a = await createTenant(local.app);
    const b = await createTenant(local.app);
    const id = (await createWebhook(a)).id;
    const ownerB = bearer(await sessionToken(b.tenantId, 'owner'));
    for (const [method, url] of [
      ['GET', `/v1/webhooks/${id}`],
      ['PATCH', `/v1/webhooks/${id}`],
      ['DELETE', `/v1/webhooks/${id}`],
      ['POST', `/v1/webhooks/${id}/test`],
      ['GET', `/v1/webhooks/${id}/deliveries`],
    ] as const) {
      const res = await inject(local, method, url, ownerB, method === 'PATCH' ? { enabled: false } : undefined);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await inject(local, 'GET', '/v1/webhooks', b.auth)).json().webhooks).toEqual([]);
    expect((await inject(local, 'GET', `/v1/webhooks/${id}`, a.auth)).json().enabled).toBe(true);
  });
});

describe('POST /v1/webhooks/{id}/test', () => {
  it("sends a signed ping and answers the receiver's status and first 4 KB, outside the delivery log", async () => {
    const t = await createTenant(local.app);
    const id = (await createWebhook(t, { url: receiver.url('/big', 'localhost') })).id;
    const res = await inject(local, 'POST', `/v1/webhooks/${id}/test`, t.auth);
    expect(res.statusCode).toBe(200);
    expect(webhookTestResult.parse(res.json())).toEqual({ status: 201, body: 'b'.repeat(4096), error: null });

    const [ping] = receiver.to('/big').filter((r) => JSON.parse(r.rawBody.toString()).data.webhook_id === id);
    const expected = `sha256=${createHmac('sha256', SECRET).update(ping!.rawBody).digest('hex')}`;
    expect(ping!.headers['x-service-signature']).toBe(expected);
    const body = JSON.parse(ping!.rawBody.toString());
    expect(Object.keys(body)).toEqual(['id', 'type', 'created_at', 'tenant_id', 'project_id', 'data']);
    expect(body).toMatchObject({ type: 'ping', tenant_id: t.tenantId, project_id: null });
    expect(ping!.headers['x-service-event-id']).toBe(body.id);
    expect(Math.abs(Number(ping!.headers['x-service-timestamp']) - Date.now() / 1000)).toBeLessThan(30);

    const log = await inject(local, 'GET', `/v1/webhooks/${id}/deliveries`, t.auth);
    expect(log.json().deliveries).toEqual([]);
  });

  it('answers a redirect as it is, without following it, and 0 for a closed port', async () => {
    const t = await createTenant(local.app);
    const moved = (await createWebhook(t, { url: receiver.url('/moved') })).id;
    expect((await inject(local, 'POST', `/v1/webhooks/${moved}/test`, t.auth)).json()).toMatchObject({ status: 302 });
    expect(receiver.to('/elsewhere')).toEqual([]);

    const closed = (await createWebhook(t, { url: `https://127.0.0.1:${await freePort()}/hook` })).id;
    const res = await inject(local, 'POST', `/v1/webhooks/${closed}/test`, t.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 0, body: '', error: expect.stringContaining('ECONNREFUSED') });
  });

  it('answers 422 when the stored URL fails the check now', async () => {
    const t = await createTenant(local.app);
    const id = (await createWebhook(t)).id;
    // The same row seen by a server without the loopback allowance.
    const res = await inject(strict, 'POST', `/v1/webhooks/${id}/test`, t.auth);
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('webhook.url.private_ip');
  });
});

describe('GET /v1/webhooks/{id}/deliveries', () => {
  it('lists every attempt newest first, page by page', async () => {
    const t = await createTenant(local.app);
    const id = (await createWebhook(t, { url: receiver.url('/log') })).id;
    const emitted: string[] = [];
    for (let i = 0; i < 3; i++) {
      emitted.push(await local.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: t.projectId, data: { n: i } }));
    }
    const list = (query = '') => inject(local, 'GET', `/v1/webhooks/${id}/deliveries${query}`, t.auth).then((r) => deliveryList.parse(r.json()));
    await pollUntil(list, (page) => page.deliveries.length === 3);

    const page1 = await list('?limit=2');
    expect(page1.has_more).toBe(true);
    const page2 = await list(`?limit=2&cursor=${page1.next_cursor}`);
    expect(page2).toMatchObject({ has_more: false, next_cursor: null });
    const all = [...page1.deliveries, ...page2.deliveries];
    expect(all.map((d) => d.id)).toEqual([...all.map((d) => d.id)].sort().reverse());
    expect(new Set(all.map((d) => d.event_id))).toEqual(new Set(emitted));
    for (const d of all) expect(d).toMatchObject({ event_type: 'failure.detected', attempt: 1, status: 200, error: null });
  });
});
