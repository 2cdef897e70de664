import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceUuid } from '../../../src/platform/otel-ids.js';
import { anOtlpRequest, anOtlpSpan, otelSpanId, otelTraceId } from '../../builders/otlp.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../../helpers/app.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import { pollUntil, TEST_REDIS_PREFIX } from '../../helpers/workers.js';

/**
 * OTLP trace rows are derived in the group commit (Postgres and ClickHouse only), so spans sent
 * while Redis is away are acknowledged and their traces are in the list on the acknowledgement:
 * no queue stands between a span and its trace row.
 */
const proxy = TcpProxy.forUrl(process.env.REDIS_URL!, 6379);
let ctx: TestContext;
let t: TestTenant;

beforeAll(async () => {
  await proxy.start();
  ctx = await startApp({ REDIS_URL: proxy.rewrite(process.env.REDIS_URL!), REDIS_PREFIX: TEST_REDIS_PREFIX });
  t = await createTenant(ctx.app);
});
afterAll(async () => {
  await proxy.restore();
  await ctx?.close();
  await proxy.close();
});

const listed = async () => {
  const res = await ctx.app.inject({ method: 'GET', url: '/v1/traces?limit=100&from=2026-10-01T00:00:00.000Z', headers: t.auth });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().traces as { id: string; span_count: number }[]).map((x) => `${x.id}:${x.span_count}`).sort();
};

describe('OTLP traces sent while Redis is down', () => {
  it('are acknowledged and listed on their acknowledgement', { timeout: 60_000 }, async () => {
    await proxy.cut();
    await pollUntil(async () => ctx.stores.redis.status, (status) => status !== 'ready');
    const expected: string[] = [];
    for (const traceId of [otelTraceId(), otelTraceId()]) {
      const spans = [anOtlpSpan({ traceId, spanId: otelSpanId() }), anOtlpSpan({ traceId, spanId: otelSpanId() })];
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/otlp/traces',
        headers: { ...t.auth, 'content-type': 'application/json' },
        payload: JSON.stringify(anOtlpRequest(spans)),
      });
      expect(res.statusCode, res.body).toBe(200);
      expected.push(`${traceUuid(traceId)}:2`);
      expect(await listed()).toEqual([...expected].sort());
    }
    expect(ctx.stores.redis.status).not.toBe('ready');
  });
});
