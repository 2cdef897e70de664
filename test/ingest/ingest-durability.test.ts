import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

async function storedIds(tenantId: string): Promise<Set<string>> {
  const rows = await ctx.stores.ch.rows<{ id: string }>('test', 'SELECT id FROM traces WHERE tenant_id = {t:UUID}', { t: tenantId });
  return new Set(rows.map((r) => r.id));
}

describe('acknowledged means durable', () => {
  it('every acknowledged trace of many concurrent requests is readable with all its spans', async () => {
    const t = await createTenant(ctx.app);
    const bodies = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0 ? { single: aTrace({ spans: [aSpan(), aSpan(), aSpan()] }) } : { batch: [aTrace(), aTrace({ spans: [aSpan(), aSpan()] })] },
    );
    const responses = await Promise.all(
      bodies.map((b) =>
        'single' in b
          ? ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: b.single })
          : ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: b.batch } }),
      ),
    );
    const acknowledged = responses.flatMap((r) =>
      r.statusCode === 201 ? (r.json().results?.map((x: { id: string }) => x.id) ?? [r.json().id]) : [],
    );
    expect(acknowledged).toHaveLength(60);
    // Read immediately, no waiting: an acknowledgement means the rows are already committed.
    const stored = await storedIds(t.tenantId);
    for (const id of acknowledged) expect(stored.has(id), id).toBe(true);
    const [spans] = await ctx.stores.ch.rows<{ n: string }>('test', 'SELECT count() AS n FROM spans WHERE tenant_id = {t:UUID}', {
      t: t.tenantId,
    });
    expect(Number(spans!.n)).toBe(20 * 3 + 20 * 3);
  });

  it('never acknowledges a write the trace store refused, and the retry then succeeds', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    const batch = [aTrace(), aTrace()];
    // A real failure: the spans table is gone while the requests run.
    await ctx.stores.ch.command('test', 'RENAME TABLE spans TO spans_unavailable');
    try {
      const single = await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace });
      expect(single.statusCode).toBe(503);
      expect(single.headers['retry-after']).toBeDefined();
      const many = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: batch } });
      expect(many.statusCode).toBe(503);
    } finally {
      await ctx.stores.ch.command('test', 'RENAME TABLE spans_unavailable TO spans');
    }
    expect((await storedIds(t.tenantId)).size).toBe(0);
    // Nothing was left reserved: the same ids are accepted now, not refused as duplicates.
    expect((await ctx.app.inject({ method: 'POST', url: '/v1/ingest', headers: t.auth, payload: trace })).statusCode).toBe(201);
    const retry = await ctx.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: batch } });
    expect(retry.statusCode).toBe(201);
    expect(await storedIds(t.tenantId)).toEqual(new Set([trace.id, ...batch.map((b) => b.id)]));
    const [usage] = await ctx.stores.sql<{ traces: number }[]>`select traces from trace_usage where tenant_id = ${t.tenantId}`;
    expect(usage!.traces).toBe(3);
  });
});
