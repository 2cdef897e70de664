import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { deliveryList, type Delivery } from '../../src/modules/webhooks/schemas.js';
import { createTenant, sessionToken, bearer, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { HttpsReceiver, makeTestCa, trustInThisProcess, type ReceivedRequest } from '../helpers/https-receiver.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * The delivery pipeline in-process: WebhookService.emit (the API other modules call) through the
 * `webhooks` and `webhooks-reconcile` workers to a real HTTPS receiver. Retries are 50 ms apart at
 * first (LOOPTRACE_WEBHOOK_RETRY_BASE_MS), so all eight attempts take about 6 s.
 */
const SECRET = 'emit-test-secret-0123456789';
const ca = makeTestCa();
trustInThisProcess(ca);

let ctx: TestContext;
let workers: Workers;
let receiver: HttpsReceiver;
const flakyCalls = new Map<string, number>();

beforeAll(async () => {
  ctx = await startApp({ LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true', LOOPTRACE_WEBHOOK_RETRY_BASE_MS: '50', REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx, ['webhooks', 'webhooks-reconcile']);
  receiver = await HttpsReceiver.start(ca, (req) => {
    if (req.path.startsWith('/fail')) return { status: 500, body: 'down' };
    if (req.path.startsWith('/flaky')) {
      const calls = (flakyCalls.get(req.path) ?? 0) + 1;
      flakyCalls.set(req.path, calls);
      return { status: calls <= 2 ? 503 : 204 };
    }
    return { status: 200, body: 'ok' };
  });
});
afterAll(async () => {
  await workers?.close();
  await Promise.all([ctx?.close(), receiver?.close()]);
});

async function createWebhook(t: TestTenant, path: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/webhooks', headers: t.auth, payload: { url: receiver.url(path), secret: SECRET, ...body } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

const emit = (t: TestTenant, data: Record<string, unknown> = {}) =>
  ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: t.projectId, data });

const deliveriesOf = async (t: TestTenant, webhookId: string): Promise<Delivery[]> =>
  deliveryList.parse((await ctx.app.inject({ method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries`, headers: t.auth })).json()).deliveries;

const eventsAt = (path: string, eventId: string): ReceivedRequest[] =>
  receiver.to(path).filter((r) => r.headers['x-service-event-id'] === eventId);

async function received(path: string, eventId: string, count = 1): Promise<ReceivedRequest[]> {
  const got = await pollUntil(async () => eventsAt(path, eventId), (r) => r.length >= count, 200, 50);
  expect(got.length, `${count} deliveries of ${eventId} at ${path}`).toBe(count);
  return got;
}

function verifySignature(req: ReceivedRequest, secret: string): boolean {
  const header = String(req.headers['x-service-signature']);
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(req.rawBody).digest('hex')}`);
  return header.length === expected.length && timingSafeEqual(Buffer.from(header), expected);
}

describe('emit', () => {
  it("delivers an event emitted inside the caller's transaction once it commits, signed over the raw body", async () => {
    const t = await createTenant(ctx.app);
    const webhookId = await createWebhook(t, '/tx');
    const eventId = await ctx.stores.sql.begin((tx) =>
      ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: t.projectId, data: { cluster_id: 'c1', count: 3 } }, tx),
    );
    const [delivery] = await received('/tx', eventId);
    expect(verifySignature(delivery!, SECRET)).toBe(true);
    expect(verifySignature(delivery!, 'some-other-secret-0123')).toBe(false);
    const body = JSON.parse(delivery!.rawBody.toString());
    expect(Object.keys(body)).toEqual(['id', 'type', 'created_at', 'tenant_id', 'project_id', 'data']);
    expect(body).toEqual({ id: eventId, type: 'failure.detected', created_at: expect.any(String), tenant_id: t.tenantId, project_id: t.projectId, data: { cluster_id: 'c1', count: 3 } });
    expect(delivery!.headers).toMatchObject({ 'content-type': 'application/json', 'x-service-delivery-attempt': '1', 'x-service-event-id': eventId });
    expect(Math.abs(Number(delivery!.headers['x-service-timestamp']) - Date.now() / 1000)).toBeLessThan(30);

    const log = await pollUntil(() => deliveriesOf(t, webhookId), (d) => d.length === 1);
    expect(log).toMatchObject([{ event_id: eventId, event_type: 'failure.detected', attempt: 1, status: 200, error: null }]);
  });

  it('delivers nothing for a transaction that rolls back', async () => {
    const t = await createTenant(ctx.app);
    await createWebhook(t, '/rollback');
    let eventId = '';
    await ctx.stores.sql
      .begin(async (tx) => {
        eventId = await ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: null, data: {} }, tx);
        throw new Error('caller fails');
      })
      .catch(() => {});
    const marker = await emit(t);
    await received('/rollback', marker);
    expect(eventsAt('/rollback', eventId)).toEqual([]);
    expect(await ctx.stores.sql`select 1 from webhook_events where id = ${eventId}`).toHaveLength(0);
  });

  it('refuses an event type no webhook can subscribe to', async () => {
    const t = await createTenant(ctx.app);
    await expect(ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detcted', project_id: null, data: {} })).rejects.toThrow(/unknown webhook event type/);
  });
});

describe('delivery', () => {
  it('retries a failing receiver eight times with growing delays, logs each attempt, then dead-letters it', { timeout: 60_000 }, async () => {
    const t = await createTenant(ctx.app);
    const webhookId = await createWebhook(t, '/fail');
    const eventId = await emit(t, { n: 1 });
    const attempts = await received('/fail', eventId, 8);
    expect(attempts.map((r) => r.headers['x-service-delivery-attempt'])).toEqual(['1', '2', '3', '4', '5', '6', '7', '8']);
    expect(attempts.every((r) => verifySignature(r, SECRET))).toBe(true);

    const dlq = await pollUntil(
      () => ctx.stores.sql<{ kind: string; ref_id: string; payload: { webhook_id: string; event: { id: string } }; attempts: number; last_error: string }[]>`
        select kind, ref_id, payload, attempts, last_error from dlq where tenant_id = ${t.tenantId}`,
      (rows) => rows.length > 0,
    );
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({ kind: 'webhook_delivery', attempts: 8, last_error: 'HTTP 500', payload: { webhook_id: webhookId, event: { id: eventId, type: 'failure.detected', data: { n: 1 } } } });
    const [dispatch] = await ctx.stores.sql<{ id: string; state: string }[]>`select id, state from webhook_dispatches where event_id = ${eventId}`;
    expect(dispatch).toMatchObject({ id: dlq[0]!.ref_id, state: 'failed' });

    const log = await deliveriesOf(t, webhookId);
    expect(log.map((d) => d.attempt)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
    expect(log.every((d) => d.status === 500 && d.error === 'HTTP 500')).toBe(true);
    // Exponential: each gap at least the base delay times 2^(attempt-1).
    const times = (await ctx.stores.sql<{ created_at: Date }[]>`
      select created_at from webhook_deliveries where event_id = ${eventId} order by attempt`).map((r) => r.created_at.getTime());
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(50 * 2 ** (i - 1) - 5);
  });

  it('stops retrying once the receiver answers 2xx', async () => {
    const t = await createTenant(ctx.app);
    const webhookId = await createWebhook(t, `/flaky/${Date.now()}`);
    const eventId = await emit(t);
    await received('/flaky', eventId, 3);
    const log = await pollUntil(() => deliveriesOf(t, webhookId), (d) => d.length === 3);
    expect(log.map((d) => d.status)).toEqual([204, 503, 503]);
    expect(await ctx.stores.sql`select 1 from dlq where tenant_id = ${t.tenantId}`).toHaveLength(0);
  });

  it('sends nothing to disabled webhooks, webhooks of other events, or tenants below Pro', async () => {
    const t = await createTenant(ctx.app);
    await createWebhook(t, '/disabled', { enabled: false });
    await createWebhook(t, '/anomalies', { events: ['anomaly.detected'] });
    await createWebhook(t, '/control');
    const later = await createWebhook(t, '/disabled-later');
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    // Disabled after the event's dispatch exists but before its delivery runs.
    const eventId = await ctx.stores.sql.begin(async (tx) => {
      const id = await ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: null, data: {} }, tx);
      const res = await ctx.app.inject({ method: 'PATCH', url: `/v1/webhooks/${later}`, headers: owner, payload: { enabled: false } });
      expect(res.statusCode).toBe(200);
      return id;
    });
    await received('/control', eventId);
    const states = await pollUntil(
      () => ctx.stores.sql<{ state: string }[]>`select state from webhook_dispatches where event_id = ${eventId} order by state`,
      (rows) => rows.every((r) => r.state !== 'pending'),
    );
    expect(states.map((r) => r.state)).toEqual(['delivered', 'skipped']);
    for (const path of ['/disabled', '/anomalies', '/disabled-later']) expect(receiver.to(path)).toEqual([]);

    const starter = await createTenant(ctx.app);
    await createWebhook(starter, '/starter');
    await ctx.app.services.tenants.setPlan(starter.tenantId, 'starter');
    const starterEvent = await emit(starter);
    expect(await ctx.stores.sql`select 1 from webhook_dispatches where event_id = ${starterEvent}`).toHaveLength(0);
  });

  it('re-queues a dispatch whose job was lost', async () => {
    const t = await createTenant(ctx.app);
    await createWebhook(t, '/lost');
    // Queued an hour ago and never touched since: its job is gone (a Redis outage or flush).
    const eventId = await ctx.stores.sql.begin(async (tx) => {
      const id = await ctx.app.services.webhooks.emit(t.tenantId, { type: 'failure.detected', project_id: null, data: {} }, tx);
      await tx`update webhook_dispatches set queued_at = now() - interval '1 hour', updated_at = now() - interval '1 hour' where event_id = ${id}`;
      return id;
    });
    await received('/lost', eventId);
  });
});
