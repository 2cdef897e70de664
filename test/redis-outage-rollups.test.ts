import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceUuid } from '../src/modules/ingest/otlp/ids.js';
import { anOtlpRequest, anOtlpSpan, otelSpanId, otelTraceId } from './builders/otlp.js';
import { createTenant, startApp, type TestContext, type TestTenant } from './helpers/app.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from './helpers/workers.js';
import type { Workers } from '../src/jobs/workers.js';

/**
 * OTLP spans sent while Redis is away are acknowledged (they are in ClickHouse) but their trace
 * rollup could not be queued. The registry owes those traces a rollup, and once Redis is back the
 * reconcile job queues it: the traces appear in the list without the exporter sending anything again.
 */
const proxy = TcpProxy.forUrl(process.env.REDIS_URL!, 6379);
let ctx: TestContext;
let workers: Workers;
let t: TestTenant;

beforeAll(async () => {
  await proxy.start();
  ctx = await startApp({ REDIS_URL: proxy.rewrite(process.env.REDIS_URL!), REDIS_PREFIX: TEST_REDIS_PREFIX });
  workers = await startTestWorkers(ctx, ['trace-rollup', 'ingest-reconcile']);
  t = await createTenant(ctx.app);
});
afterAll(async () => {
  await proxy.restore();
  await workers?.close();
  await ctx?.close();
  await proxy.close();
});

const listed = async () => {
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/traces?limit=100&from=2026-10-01T00:00:00.000Z', headers: t.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().traces as { id: string; span_count: number }[]).map((x) => `${x.id}:${x.span_count}`).sort();
};

describe('OTLP traces sent while Redis is down', () => {
  it('are acknowledged, and rolled up into the trace list once Redis is back', { timeout: 90_000 }, async () => {
    await proxy.cut();
    await pollUntil(async () => ctx.stores.redis.status, (status) => status !== 'ready');
    const traces = [otelTraceId(), otelTraceId()];
    for (const traceId of traces) {
      const spans = [anOtlpSpan({ traceId, spanId: otelSpanId() }), anOtlpSpan({ traceId, spanId: otelSpanId() })];
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/otlp/traces',
        headers: { ...t.auth, 'content-type': 'application/json' },
        payload: JSON.stringify(anOtlpRequest(spans)),
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(await listed()).toEqual([]); // stored as spans, no trace row yet: the rollup is owed
    // Longer than a producer call may wait for Redis (2 s): queueing these rollups has failed for good.
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    await proxy.restore();
    const expected = traces.map((id) => `${traceUuid(id)}:2`).sort();
    // Owed rollups are queued by the reconcile job (every 10 s) once they are 10 s old.
    const rows = await pollUntil(listed, (r) => r.length === expected.length, 120, 500);
    expect(rows).toEqual(expected);
    // The registry no longer owes them a rollup (the job records what it covered after writing the row).
    const owed = () => ctx.stores.sql`
      select 1 from trace_registry where tenant_id = ${t.tenantId} and (rolled_up_at is null or spans_at > rolled_up_at)`;
    const left = await pollUntil(owed, (r) => r.length === 0);
    expect(left).toHaveLength(0);
  });
});
