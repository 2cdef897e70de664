import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceUuid } from '../../src/platform/otel-ids.js';
import { anOtlpRequest, anOtlpSpan, otelSpanId, otelTraceId } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { freePort, ServerProcess } from '../helpers/server-process.js';

/**
 * "Acknowledged means durable; a client that retries what was not acknowledged loses nothing",
 * checked the way the bug was found: batch ingest at full speed into the real server, SIGKILL at
 * several points, restart on the same stores, the unanswered requests sent again at once and then
 * with backoff. Every trace that ever got 201 or 409 must read back with all of its spans.
 */
const CONCURRENCY = 6;
const TRACES_PER_REQUEST = 20;
const SPANS_PER_TRACE = 5;
const KILL_AFTER_MS = [700, 1_500, 2_600];

let ctx: TestContext;
let tenants: TestTenant[];
let server: ServerProcess;

beforeAll(async () => {
  // In-process app only to create the tenant through the CLI's code path (same Postgres).
  ctx = await startApp();
  tenants = await Promise.all([...KILL_AFTER_MS, 'otlp'].map(() => createTenant(ctx.app)));
  server = new ServerProcess(await freePort(), {
    LOOPTRACE_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'looptrace-crash-')),
    // The same instance across restarts: the restarted process settles its predecessor's writes.
    LOOPTRACE_INSTANCE_ID: `crash-test-${randomUUID()}`,
    REDIS_PREFIX: `looptrace-crash-${process.pid}`,
    LOG_LEVEL: 'warn',
  });
  await server.start();
});

afterAll(async () => {
  await server?.stop();
  await ctx?.close();
});

type Body = { traces: ReturnType<typeof aTrace>[] };
interface Outcome {
  /** The HTTP status per item, or undefined when the request got no answer. */
  statuses: (number | undefined)[];
}

const aBody = (): Body => ({
  traces: Array.from({ length: TRACES_PER_REQUEST }, () => aTrace({ spans: Array.from({ length: SPANS_PER_TRACE }, () => aSpan()) })),
});

async function send(tenant: TestTenant, body: Body): Promise<Outcome> {
  try {
    const res = await fetch(`${server.url}/v1/ingest/batch`, {
      method: 'POST',
      headers: { ...tenant.auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { results?: { status: number }[] };
    if (!json.results) return { statuses: body.traces.map(() => res.status) };
    return { statuses: json.results.map((r) => r.status) };
  } catch {
    return { statuses: body.traces.map(() => undefined) };
  }
}

class Ledger {
  /** Trace ids answered 201 or 409 at least once: each must be readable whole. */
  readonly claimed = new Set<string>();
  readonly unexpected: string[] = [];

  record(body: Body, outcome: Outcome): Body | undefined {
    const unsettled: Body = { traces: [] };
    body.traces.forEach((trace, i) => {
      const status = outcome.statuses[i];
      if (status === 201 || status === 409) this.claimed.add(trace.id);
      else if (status === undefined || status === 503) unsettled.traces.push(trace);
      else this.unexpected.push(`${trace.id}: ${status}`);
    });
    return unsettled.traces.length > 0 ? unsettled : undefined;
  }
}

/** Full-speed load until the kill; returns the bodies whose requests were cut off unanswered or partly 503. */
async function loadUntilKilled(tenant: TestTenant, ledger: Ledger, killAfterMs: number): Promise<Body[]> {
  let killed = false;
  const unsettled: Body[] = [];
  const worker = async () => {
    while (!killed) {
      const body = aBody();
      const rest = ledger.record(body, await send(tenant, body));
      if (rest) unsettled.push(rest);
    }
  };
  const workers = Array.from({ length: CONCURRENCY }, worker);
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  await server.kill();
  killed = true;
  await Promise.all(workers);
  return unsettled;
}

/** Retries until every item is 201 or 409: at once, then with backoff while the answer is 503. */
async function retryUntilSettled(tenant: TestTenant, ledger: Ledger, bodies: Body[]): Promise<void> {
  let pending = bodies;
  for (let attempt = 0; pending.length > 0 && attempt < 12; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 3_000)));
    const outcomes = await Promise.all(pending.map((b) => send(tenant, b)));
    pending = pending.map((b, i) => ledger.record(b, outcomes[i]!)).filter((b): b is Body => b !== undefined);
  }
  expect(pending.flatMap((b) => b.traces.map((t) => t.id)), 'traces never settled by retrying').toEqual([]);
}

/** Claimed traces that do not read back with all their spans: the export for the bulk, the detail route for a sample. */
async function unreadable(tenant: TestTenant, ids: ReadonlySet<string>): Promise<string[]> {
  const res = await fetch(`${server.url}/v1/traces/export?format=jsonl&from=2026-10-01T00:00:00.000Z&to=2026-12-01T00:00:00.000Z`, {
    headers: tenant.auth,
  });
  expect(res.status).toBe(200);
  const spansPerTrace = new Map<string, number>();
  for (const line of (await res.text()).split('\n').filter(Boolean)) {
    const { trace_id } = JSON.parse(line) as { trace_id: string };
    spansPerTrace.set(trace_id, (spansPerTrace.get(trace_id) ?? 0) + 1);
  }
  const missing = [...ids].filter((id) => spansPerTrace.get(id) !== SPANS_PER_TRACE).map((id) => `${id}: ${spansPerTrace.get(id) ?? 0} spans exported`);
  for (const id of [...ids].slice(0, 50)) {
    const detail = await fetch(`${server.url}/v1/traces/${id}`, { headers: tenant.auth });
    const spans = detail.ok ? ((await detail.json()) as { spans: unknown[] }).spans.length : 0;
    if (spans !== SPANS_PER_TRACE) missing.push(`${id}: GET ${detail.status}, ${spans} spans`);
  }
  return missing;
}

describe('SIGKILL during full-speed batch ingest, restart, retry', () => {
  it.each(KILL_AFTER_MS.map((ms, i) => [ms, i]))('killed after %i ms: every trace answered 201 or 409 reads back whole', async (killAfterMs, i) => {
    const tenant = tenants[i]!;
    const ledger = new Ledger();
    const t0 = Date.now();
    const cutOff = await loadUntilKilled(tenant, ledger, killAfterMs);
    const t1 = Date.now();
    expect(ledger.claimed.size, 'load reached the server before the kill').toBeGreaterThan(0);
    await server.start();
    const t2 = Date.now();
    await retryUntilSettled(tenant, ledger, cutOff);
    const t3 = Date.now();
    expect(ledger.unexpected).toEqual([]);
    expect(await unreadable(tenant, ledger.claimed)).toEqual([]);
    console.log(JSON.stringify({ killAfterMs, claimed: ledger.claimed.size, cutOff: cutOff.length, load: t1 - t0, restart: t2 - t1, retry: t3 - t2, verify: Date.now() - t3 }));
  });
});

/** Every listed trace of the tenant → the span counts of its rows in the list (one entry per row shown). */
async function listedTraces(tenant: TestTenant): Promise<Map<string, number[]>> {
  const listed = new Map<string, number[]>();
  let cursor: string | null = null;
  do {
    const query: string = `from=2026-10-01T00:00:00.000Z&limit=1000${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await fetch(`${server.url}/v1/traces?${query}`, { headers: tenant.auth });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { traces: { id: string; span_count: number }[]; next_cursor: string | null };
    for (const t of page.traces) listed.set(t.id, [...(listed.get(t.id) ?? []), t.span_count]);
    cursor = page.next_cursor;
  } while (cursor);
  return listed;
}

describe('SIGKILL during full-speed OTLP export, restart, the exporter retrying', () => {
  const TRACES = 5;
  const SPANS = 4;
  const otlpBody = () =>
    anOtlpRequest(
      Array.from({ length: TRACES }, () => otelTraceId()).flatMap((traceId) =>
        Array.from({ length: SPANS }, () => anOtlpSpan({ traceId, spanId: otelSpanId() })),
      ),
    );
  type OtlpBody = ReturnType<typeof otlpBody>;
  const traceIdsOf = (body: OtlpBody) =>
    [...new Set((body.resourceSpans[0]!.scopeSpans[0]!.spans as { traceId: string }[]).map((sp) => traceUuid(sp.traceId)))];

  async function exportOtlp(tenant: TestTenant, body: OtlpBody): Promise<number | undefined> {
    try {
      const res = await fetch(`${server.url}/v1/otlp/traces`, {
        method: 'POST',
        headers: { ...tenant.auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return undefined;
    }
  }

  it('every span acknowledged, or sent again until acknowledged, is stored, and each trace is counted once', { timeout: 180_000 }, async () => {
    const tenant = tenants[KILL_AFTER_MS.length]!;
    const sent: OtlpBody[] = [];
    let unsettled: OtlpBody[] = [];
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const body = otlpBody();
        sent.push(body);
        const status = await exportOtlp(tenant, body);
        if (status !== 200) unsettled.push(body); // the exporter retries these: no answer, or 503
      }
    };
    const workers = Array.from({ length: CONCURRENCY }, worker);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await server.kill();
    killed = true;
    await Promise.all(workers);
    await server.start();
    const restarted = Date.now();
    for (let attempt = 0; unsettled.length > 0 && attempt < 12; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 3_000)));
      const statuses = await Promise.all(unsettled.map((b) => exportOtlp(tenant, b)));
      unsettled = unsettled.filter((_, i) => statuses[i] !== 200);
    }
    expect(unsettled, 'requests never acknowledged by retrying').toEqual([]);

    const expected = new Set(sent.flatMap(traceIdsOf));
    // Trace rows are written with their spans, so once every request is acknowledged every trace is
    // listed, once, whole: no waiting for a rollup.
    const listed = await listedTraces(tenant);
    const wrong = [...expected].filter((id) => listed.get(id)?.join() !== String(SPANS)).map((id) => `${id}: ${listed.get(id)?.join() ?? 'not listed'}`);
    expect(wrong.slice(0, 10), `${wrong.length} of ${expected.size} traces not listed once with all ${SPANS} spans`).toEqual([]);
    expect([...listed.keys()].filter((id) => !expected.has(id))).toEqual([]);
    const res = await fetch(`${server.url}/v1/traces/export?format=jsonl&from=2026-10-01T00:00:00.000Z&to=2026-12-01T00:00:00.000Z`, { headers: tenant.auth });
    const spans = new Map<string, number>();
    for (const line of (await res.text()).split('\n').filter(Boolean)) {
      const { trace_id } = JSON.parse(line) as { trace_id: string };
      spans.set(trace_id, (spans.get(trace_id) ?? 0) + 1);
    }
    const missing = [...expected].filter((id) => spans.get(id) !== SPANS);
    expect(missing.slice(0, 10), `${missing.length} of ${expected.size} traces not exported whole`).toEqual([]);
    const [usage] = await ctx.stores.sql<{ traces: number }[]>`select sum(traces)::int as traces from trace_usage where tenant_id = ${tenant.tenantId}`;
    expect(usage!.traces).toBe(expected.size);
    console.log(JSON.stringify({ otlp: { requests: sent.length, traces: expected.size, settled_after_restart_ms: Date.now() - restarted } }));
  });
});
