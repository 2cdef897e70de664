import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { HttpsReceiver, makeTestCa, trustInThisProcess } from '../helpers/https-receiver.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/** A real failed job (a webhook delivery that used up its 8 attempts) retried and discarded through /v1/dlq. */
const ca = makeTestCa();
trustInThisProcess(ca);

let ctx: TestContext;
let workers: Workers;
let receiver: HttpsReceiver;
const healthy = new Set<string>();

beforeAll(async () => {
  ctx = await startApp({ LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true', LOOPTRACE_WEBHOOK_RETRY_BASE_MS: '10', REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx, ['webhooks', 'webhooks-reconcile']);
  receiver = await HttpsReceiver.start(ca, (req) => (healthy.has(req.path) ? { status: 200, body: 'ok' } : { status: 500, body: 'down' }));
});
afterAll(async () => {
  await workers?.close();
  await Promise.all([ctx?.close(), receiver?.close()]);
});

const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string>) => ctx.app.inject({ method, url, headers });

async function deadLettered(t: TestTenant, path: string): Promise<{ id: string; eventId: string }> {
  const hook = await ctx.app.inject({ method: 'POST', url: '/v1/webhooks', headers: t.auth, payload: { url: receiver.url(path), secret: 'dlq-test-secret-0123456789' } });
  expect(hook.statusCode, hook.body).toBe(201);
  const eventId = await ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: t.projectId, data: { path } });
  // Earlier webhooks of the tenant get the event too: this webhook's entry is the one named after it.
  const mine = (r: Awaited<ReturnType<typeof call>>) => r.json().entries.filter((e: { summary: string }) => e.summary.endsWith(hook.json().id));
  const [entry] = mine(await pollUntil(() => call('GET', '/v1/dlq', t.auth), (r) => mine(r).length > 0, 300, 50));
  expect(entry).toMatchObject({ kind: 'webhook_delivery', attempts: 8, last_error: 'HTTP 500', resolution: null, summary: `failure.detected to webhook ${hook.json().id}` });
  return { id: entry.id, eventId };
}

describe('/v1/dlq', () => {
  it('retries a dead-lettered delivery from the start: the receiver gets it again and the entry is resolved', { timeout: 60_000 }, async () => {
    const t = await createTenant(ctx.app);
    const path = `/retry-${Date.now()}`;
    const { id, eventId } = await deadLettered(t, path);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    const viewer = bearer(await sessionToken(t.tenantId, 'viewer'));
    expect((await call('GET', '/v1/dlq', viewer)).json().entries.map((e: { id: string }) => e.id)).toEqual([id]);
    expect((await call('POST', `/v1/dlq/${id}/retry`, viewer)).statusCode).toBe(403);
    expect((await call('POST', `/v1/dlq/${id}/retry`, t.auth)).statusCode).toBe(403); // API keys act as members

    healthy.add(path);
    const retried = await call('POST', `/v1/dlq/${id}/retry`, owner);
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ id, resolution: 'retried', resolved_at: expect.any(String) });
    const deliveredAgain = await pollUntil(
      async () => receiver.to(path).filter((r) => r.headers['x-service-event-id'] === eventId),
      (r) => r.some((x) => x.headers['x-service-delivery-attempt'] === '1' && r.length > 8),
      300,
      50,
    );
    expect(deliveredAgain).toHaveLength(9);
    // The worker records the outcome once the receiver's answer is in: after the receiver saw the request.
    const dispatchState = async () => (await ctx.stores.sql<{ state: string }[]>`select state from webhook_dispatches where event_id = ${eventId}`)[0]?.state;
    expect(await pollUntil(dispatchState, (state) => state !== 'pending', 100, 50)).toBe('delivered');
    expect((await call('GET', '/v1/dlq', owner)).json().entries).toEqual([]);
    expect((await call('GET', '/v1/dlq?state=resolved', owner)).json().entries.map((e: { id: string }) => e.id)).toEqual([id]);
    const again = await call('POST', `/v1/dlq/${id}/retry`, owner);
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('dlq.resolved');
  });

  it('discards an entry, refuses a retry whose webhook is gone, and hides other tenants', { timeout: 60_000 }, async () => {
    const t = await createTenant(ctx.app);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    const first = await deadLettered(t, `/discard-${Date.now()}`);
    const discarded = await call('POST', `/v1/dlq/${first.id}/discard`, owner);
    expect(discarded.json()).toMatchObject({ resolution: 'discarded' });

    const other = await createTenant(ctx.app);
    expect((await call('GET', `/v1/dlq/${first.id}`, other.auth)).statusCode).toBe(404);
    expect((await call('POST', `/v1/dlq/${first.id}/discard`, bearer(await sessionToken(other.tenantId, 'owner')))).statusCode).toBe(404);

    const second = await deadLettered(t, `/gone-${Date.now()}`);
    const [hook] = (await ctx.app.inject({ method: 'GET', url: '/v1/webhooks', headers: t.auth })).json().webhooks.filter((w: { url: string }) => w.url.includes('/gone-'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, headers: owner })).statusCode).toBe(204);
    const refused = await call('POST', `/v1/dlq/${second.id}/retry`, owner);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('dlq.not_retryable');
  });
});
