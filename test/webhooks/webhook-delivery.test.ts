import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { HttpsReceiver, makeTestCa, type ReceivedRequest } from '../helpers/https-receiver.js';
import { freePort, ServerProcess } from '../helpers/server-process.js';
import { pollUntil } from '../helpers/workers.js';

/**
 * The Must-show of webhooks, end to end: the real server as a child process trusts a test CA only
 * through NODE_EXTRA_CA_CERTS; a failure ingested through the API is detected by a failure rule
 * and reaches a real HTTPS receiver as a signed failure.detected delivery, checked here with
 * node:crypto alone. A receiver answering 500 gets all eight attempts (retries 100 ms apart at
 * first) and then a DLQ row; a disabled webhook gets nothing.
 */
const SECRET = 'must-show-secret-0123456789';
const RETRY_BASE_MS = 100;

let ctx: TestContext;
let tenant: TestTenant;
let server: ServerProcess;
let receiver: HttpsReceiver;

beforeAll(async () => {
  const ca = makeTestCa();
  receiver = await HttpsReceiver.start(ca, (req) => (req.path.startsWith('/fail') ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
  // In-process app only to create the tenant and to read Postgres (the server's database).
  ctx = await startApp();
  tenant = await createTenant(ctx.app, 'pro');
  server = new ServerProcess(await freePort(), {
    NODE_EXTRA_CA_CERTS: ca.caFile,
    LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true',
    LOOPTRACE_WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
    LOOPTRACE_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'looptrace-webhook-delivery-')),
    LOOPTRACE_INSTANCE_ID: `webhook-delivery-test-${randomUUID()}`,
    REDIS_PREFIX: `looptrace-webhook-delivery-${process.pid}`,
    LOG_LEVEL: 'warn',
  });
  await server.start();
});

afterAll(async () => {
  await server?.stop();
  await Promise.all([ctx?.close(), receiver?.close()]);
});

async function post(url: string, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}${url}`, {
    method: 'POST',
    headers: { ...tenant.auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(json).slice(0, 500)).toBe(201);
  return json;
}

/** What a receiver does: HMAC-SHA256 of the raw body under the shared secret, compared in constant time. */
function signatureValid(req: ReceivedRequest, secret: string): boolean {
  const given = Buffer.from(String(req.headers['x-service-signature']));
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(req.rawBody).digest('hex')}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

it('delivers a detected failure signed to a real HTTPS receiver, retries a failing one into the DLQ, skips a disabled one', { timeout: 180_000 }, async () => {
  const ok = await post('/v1/webhooks', { url: receiver.url('/ok', 'localhost'), secret: SECRET });
  const failing = await post('/v1/webhooks', { url: receiver.url('/fail'), secret: SECRET });
  await post('/v1/webhooks', { url: receiver.url('/disabled'), secret: SECRET, enabled: false });
  expect(ok).toMatchObject({ events: ['failure.detected'], enabled: true });
  expect(JSON.stringify(ok)).not.toContain(SECRET);

  await post('/v1/failure-rules', { name: 'upstream', match: { error_contains: 'upstream exploded' } });
  const trace = aTrace({ spans: [aSpan({ error: 'upstream exploded: HTTP 502 from vendor', status_code: 502 })] });
  await post('/v1/ingest', trace);

  const [delivery] = await pollUntil(async () => receiver.to('/ok'), (r) => r.length > 0, 600, 100, () => server.logs());
  expect(signatureValid(delivery!, SECRET)).toBe(true);
  expect(signatureValid(delivery!, `${SECRET}x`)).toBe(false);
  const event = JSON.parse(delivery!.rawBody.toString('utf8'));
  expect(Object.keys(event)).toEqual(['id', 'type', 'created_at', 'tenant_id', 'project_id', 'data']);
  expect(event).toMatchObject({ type: 'failure.detected', tenant_id: tenant.tenantId, project_id: tenant.projectId });
  expect(event.data).toMatchObject({ cluster_id: expect.any(String), example_trace_ids: [trace.id] });
  expect(delivery!.headers).toMatchObject({
    'content-type': 'application/json',
    'x-service-event-id': event.id,
    'x-service-delivery-attempt': '1',
    'user-agent': expect.stringMatching(/^Looptrace-Webhooks\//),
  });
  const timestamp = Number(delivery!.headers['x-service-timestamp']);
  expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);

  // The failing receiver: eight attempts of the same signed event, then one DLQ entry.
  const attempts = await pollUntil(async () => receiver.to('/fail'), (r) => r.length >= 8, 600, 100);
  expect(attempts.map((r) => r.headers['x-service-delivery-attempt'])).toEqual(['1', '2', '3', '4', '5', '6', '7', '8']);
  expect(attempts.every((r) => r.headers['x-service-event-id'] === event.id && signatureValid(r, SECRET))).toBe(true);
  const dlq = await pollUntil(
    () => ctx.stores.sql<{ kind: string; attempts: number; last_error: string; payload: { webhook_id: string; event: { id: string } } }[]>`
      select kind, attempts, last_error, payload from dlq where tenant_id = ${tenant.tenantId}`,
    (rows) => rows.length > 0,
  );
  expect(dlq).toEqual([expect.objectContaining({ kind: 'webhook_delivery', attempts: 8, last_error: 'HTTP 500', payload: expect.objectContaining({ webhook_id: failing.id, event: expect.objectContaining({ id: event.id }) }) })]);

  // Ample time for a delivery to the disabled webhook to have happened, had there been one.
  expect(receiver.to('/disabled')).toEqual([]);
  const log = await fetch(`${server.url}/v1/webhooks/${String(failing.id)}/deliveries`, { headers: tenant.auth }).then((r) => r.json() as Promise<{ deliveries: { status: number }[] }>);
  expect(log.deliveries.map((d) => d.status)).toEqual(Array(8).fill(500));
  expect(receiver.to('/ok')).toHaveLength(1);
});
