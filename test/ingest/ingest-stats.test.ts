import { randomUUID } from 'node:crypto';
import { credentials, makeGenericClientConstructor, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpGrpcServer, traceServiceDefinition, type OtlpGrpcServer } from '../../src/modules/ingest/otlp/grpc.js';
import { IngestCounters } from '../../src/modules/ingest/stats/counters.js';
import type { IngestStatsRepository } from '../../src/modules/ingest/stats/repo.js';
import { emptyDelta, type CountDelta } from '../../src/modules/ingest/stats/types.js';
import { anOtlpRequest, anOtlpSpan, otelTraceId, toProtobuf } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';

/**
 * GET /v1/ingest/stats (issue 3.2, received vs stored): a run with every refusal this process can
 * provoke — invalid native traces (the route's schema and the service's checks), duplicates (409,
 * and repeated in a batch), an id in flight, quota (native and OTLP), archived and unknown projects,
 * a session without project, invalid OTLP spans, OTLP spans of a native trace, the trace store
 * unavailable — over native, OTLP/HTTP and OTLP/gRPC. The test keeps its own ledger of what each
 * request was answered and checks that the stats say exactly that, per project, that every row
 * adds up, that stored equals what GET /v1/traces lists, and that the Prometheus counters moved
 * by the same amounts.
 */

type Source = 'native' | 'otlp';
type Outcome = 'stored' | 'validation' | 'duplicate' | 'in_flight' | 'quota' | 'project_archived' | 'project_not_found' | 'native_trace' | 'store_unavailable';
interface Entry {
  tenant: string;
  project: string | null;
  source: Source;
  outcome: Outcome;
  traces: number;
  spans: number;
}

interface Row {
  project_id: string | null;
  minute: string;
  traces_received: number;
  traces_stored: number;
  spans_received: number;
  spans_stored: number;
  refused: Record<string, number>;
  refused_traces: Record<string, number>;
}

interface Totals {
  traces_received: number;
  traces_stored: number;
  spans_received: number;
  spans_stored: number;
  refused: Record<string, number>;
  refused_traces: Record<string, number>;
}

let ctx: TestContext;
let grpc: OtlpGrpcServer;
let a: TestTenant;
let c: TestTenant;
let other: TestTenant;
/** Tenant a's projects: archived, and one that takes a trace split over two OTLP requests. */
let archived: string;
let split: string;
const ledger: Entry[] = [];
let promBefore: Map<string, number>;
let from: string;

const record = (tenant: TestTenant, project: string | null, source: Source, outcome: Outcome, traces: number, spans: number) =>
  ledger.push({ tenant: tenant.tenantId, project, source, outcome, traces, spans });

async function send(options: InjectOptions, status: number) {
  const res = await ctx.app.inject(options);
  expect(res.statusCode, res.body.slice(0, 500)).toBe(status);
  return res;
}

const ingest = (t: TestTenant, body: object, status: number, headers = t.auth) => send({ method: 'POST', url: '/v1/ingest', headers, payload: body }, status);
const batch = (t: TestTenant, traces: object[], status: number) => send({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces } }, status);
const otlp = (t: TestTenant, spans: object[], status: number, query = '', headers = t.auth) =>
  send({ method: 'POST', url: `/v1/otlp/traces${query}`, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(anOtlpRequest(spans)) }, status);

const spans = (n: number) => Array.from({ length: n }, () => aSpan());
const otlpSpans = (n: number, traceId = otelTraceId()) => Array.from({ length: n }, () => anOtlpSpan({ traceId }));

/** Every page of the stats, following next_cursor. */
async function statsOf(t: TestTenant, query: Record<string, string> = {}, limit?: number): Promise<Row[]> {
  const rows: Row[] = [];
  let params = new URLSearchParams({ from, ...query, ...(limit ? { limit: String(limit) } : {}) });
  for (;;) {
    const res = await send({ method: 'GET', url: `/v1/ingest/stats?${params}`, headers: t.auth }, 200);
    const body = res.json<{ stats: Row[]; has_more: boolean; next_cursor: string | null }>();
    rows.push(...body.stats);
    if (!body.has_more) return rows;
    params = new URLSearchParams({ cursor: body.next_cursor!, ...(limit ? { limit: String(limit) } : {}) });
  }
}

function total(rows: readonly Row[]): Totals {
  const sum: Totals = { traces_received: 0, traces_stored: 0, spans_received: 0, spans_stored: 0, refused: {}, refused_traces: {} };
  for (const r of rows) {
    sum.traces_received += r.traces_received;
    sum.traces_stored += r.traces_stored;
    sum.spans_received += r.spans_received;
    sum.spans_stored += r.spans_stored;
    for (const [k, n] of Object.entries(r.refused)) sum.refused[k] = (sum.refused[k] ?? 0) + n;
    for (const [k, n] of Object.entries(r.refused_traces)) sum.refused_traces[k] = (sum.refused_traces[k] ?? 0) + n;
  }
  return sum;
}

/** What the ledger says the stats must hold for these entries. */
function expected(entries: readonly Entry[]): Totals {
  const sum: Totals = { traces_received: 0, traces_stored: 0, spans_received: 0, spans_stored: 0, refused: {}, refused_traces: {} };
  for (const e of entries) {
    sum.traces_received += e.traces;
    sum.spans_received += e.spans;
    if (e.outcome === 'stored') {
      sum.traces_stored += e.traces;
      sum.spans_stored += e.spans;
      continue;
    }
    if (e.spans > 0) sum.refused[e.outcome] = (sum.refused[e.outcome] ?? 0) + e.spans;
    if (e.traces > 0) sum.refused_traces[e.outcome] = (sum.refused_traces[e.outcome] ?? 0) + e.traces;
  }
  return sum;
}

const sumOf = (counts: Record<string, number>) => Object.values(counts).reduce((n, v) => n + v, 0);

/** The looptrace_ingest_* series of GET /metrics, by their full name with labels. */
async function prometheus(): Promise<Map<string, number>> {
  const text = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('looptrace_ingest_')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

const TraceServiceClient = makeGenericClientConstructor(traceServiceDefinition, 'TraceService');
type RawClient = InstanceType<typeof TraceServiceClient> & {
  Export(request: Buffer, metadata: Metadata, callback: (err: ServiceError | null, response?: Buffer) => void): void;
};

async function grpcExport(t: TestTenant, body: Buffer): Promise<ServiceError | null> {
  const client = new TraceServiceClient(`127.0.0.1:${grpc.port}`, credentials.createInsecure()) as RawClient;
  const metadata = new Metadata();
  metadata.set('authorization', t.auth.authorization);
  try {
    return await new Promise((resolve) => client.Export(body, metadata, (error) => resolve(error)));
  } finally {
    client.close();
  }
}

beforeAll(async () => {
  ctx = await startApp();
  grpc = await startOtlpGrpcServer({
    services: ctx.app.services,
    config: ctx.stores.config,
    log: ctx.app.log,
    ...ctx.app.accessControl,
    sql: ctx.stores.sql,
    port: 0,
    host: '127.0.0.1',
  });
  [a, c, other] = [await createTenant(ctx.app), await createTenant(ctx.app, 'starter'), await createTenant(ctx.app)];
  const project = async (name: string) => (await send({ method: 'POST', url: '/v1/projects', headers: a.auth, payload: { name } }, 201)).json<{ id: string }>().id;
  [archived, split] = [await project('archived'), await project('split')];
  await send({ method: 'POST', url: `/v1/projects/${archived}/archive`, headers: a.auth }, 200);
  from = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
  promBefore = await prometheus();

  // ---- native ----
  const t1 = aTrace({ spans: spans(2) });
  await ingest(a, t1, 201);
  record(a, a.projectId, 'native', 'stored', 1, 2);

  const b1 = aTrace();
  const invalidItem = { ...aTrace({ spans: spans(2) }), name: undefined };
  await batch(a, [b1, aTrace({ spans: spans(3) }), invalidItem, b1], 207);
  record(a, a.projectId, 'native', 'stored', 2, 4);
  record(a, a.projectId, 'native', 'validation', 1, 2);
  record(a, a.projectId, 'native', 'duplicate', 1, 1);

  // Refused by the route's schema (before the handler), then by the service's own checks.
  await ingest(a, { ...aTrace({ spans: spans(2) }), name: undefined }, 422);
  record(a, a.projectId, 'native', 'validation', 1, 2);
  const backwards = aSpan({ end_time: '2026-11-01T11:00:00.000Z' });
  await ingest(a, aTrace({ spans: [aSpan(), backwards] }), 400);
  record(a, a.projectId, 'native', 'validation', 1, 2);

  await ingest(a, t1, 409);
  record(a, a.projectId, 'native', 'duplicate', 1, 2);

  // An id whose earlier write (of this live process) may still commit.
  const pending = aTrace();
  const writer = ctx.app.services.traceRegistry.writerId;
  await ctx.stores.sql`
    insert into trace_registry (tenant_id, trace_id, project_id, started_at, source, state, writer)
    values (${a.tenantId}, ${pending.id}, ${a.projectId}, now(), 'native', 'pending', ${writer})`;
  await ingest(a, pending, 503);
  await ctx.stores.sql`delete from trace_registry where tenant_id = ${a.tenantId} and trace_id = ${pending.id}`;
  record(a, a.projectId, 'native', 'in_flight', 1, 1);

  await ingest(a, aTrace({ project_id: randomUUID() }), 404);
  record(a, null, 'native', 'project_not_found', 1, 1);
  await ingest(a, aTrace({ project_id: archived }), 403);
  record(a, archived, 'native', 'project_archived', 1, 1);

  // ---- OTLP/HTTP ----
  const x = otelTraceId();
  const y = otelTraceId();
  const repeated = anOtlpSpan({ traceId: y });
  await otlp(a, [...otlpSpans(2, x), anOtlpSpan({ traceId: x, spanId: '0000000000000000' }), repeated, anOtlpSpan({ traceId: y }), repeated], 200);
  record(a, a.projectId, 'otlp', 'stored', 2, 5); // the repeated copy is stored (onto the same row) with its trace
  record(a, a.projectId, 'otlp', 'validation', 0, 1);

  await otlp(a, [anOtlpSpan({ traceId: t1.id.replaceAll('-', '') })], 200);
  record(a, a.projectId, 'otlp', 'native_trace', 1, 1);

  const z = otelTraceId();
  await otlp(a, otlpSpans(1, z), 200, `?project_id=${split}`);
  await otlp(a, otlpSpans(1, z), 200, `?project_id=${split}`);
  record(a, split, 'otlp', 'stored', 2, 2); // once per request the trace appears in

  await otlp(a, otlpSpans(1), 404, `?project_id=${randomUUID()}`);
  record(a, null, 'otlp', 'project_not_found', 1, 1);
  await otlp(a, otlpSpans(2), 403, `?project_id=${archived}`);
  record(a, archived, 'otlp', 'project_archived', 1, 2);
  await otlp(a, otlpSpans(1), 422, '', bearer(await sessionToken(a.tenantId, 'owner')));
  record(a, null, 'otlp', 'validation', 1, 1);

  // ---- OTLP/gRPC ----
  expect(await grpcExport(a, toProtobuf(anOtlpRequest(otlpSpans(2))))).toBeNull();
  record(a, a.projectId, 'otlp', 'stored', 1, 2);

  // ---- the trace store unavailable: nothing acknowledged, every trace refused ----
  await ctx.stores.ch.command('test', 'RENAME TABLE spans TO spans_unavailable');
  try {
    await ingest(a, aTrace({ spans: spans(2) }), 503);
    await batch(a, [aTrace(), aTrace()], 503);
    await otlp(a, otlpSpans(2), 503);
  } finally {
    await ctx.stores.ch.command('test', 'RENAME TABLE spans_unavailable TO spans');
  }
  record(a, a.projectId, 'native', 'store_unavailable', 3, 4);
  record(a, a.projectId, 'otlp', 'store_unavailable', 1, 2);

  // ---- quota: a starter tenant one trace short of its month ----
  const month = new Date().toISOString().slice(0, 7) + '-01';
  await ctx.stores.sql`insert into trace_usage (tenant_id, month, traces) values (${c.tenantId}, ${month}, 49999)`;
  await otlp(c, [...otlpSpans(2), ...otlpSpans(2)], 200);
  record(c, c.projectId, 'otlp', 'stored', 1, 2);
  record(c, c.projectId, 'otlp', 'quota', 1, 2);
  await otlp(c, otlpSpans(1), 402);
  record(c, c.projectId, 'otlp', 'quota', 1, 1);
  await batch(c, [aTrace(), aTrace()], 402);
  await ingest(c, aTrace({ spans: spans(3) }), 402);
  record(c, c.projectId, 'native', 'quota', 3, 5);
}, 60_000);

afterAll(async () => {
  await grpc?.close(1_000);
  await ctx?.close();
});

describe('GET /v1/ingest/stats', () => {
  it('says exactly what each request was answered, per project', async () => {
    const rows = await statsOf(a);
    for (const project of [a.projectId, archived, split, null]) {
      const mine = ledger.filter((e) => e.tenant === a.tenantId && e.project === project);
      expect(total(rows.filter((r) => r.project_id === project)), `project ${project}`).toEqual(expected(mine));
    }
    expect(total(await statsOf(c))).toEqual(expected(ledger.filter((e) => e.tenant === c.tenantId)));
    // One project alone: the same rows as its part of the whole.
    expect(await statsOf(a, { project_id: split })).toEqual(rows.filter((r) => r.project_id === split));
  });

  it('adds up in every row: received = stored + refused, for spans and traces', async () => {
    const rows = [...(await statsOf(a)), ...(await statsOf(c))];
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.spans_received, JSON.stringify(r)).toBe(r.spans_stored + sumOf(r.refused));
      expect(r.traces_received, JSON.stringify(r)).toBe(r.traces_stored + sumOf(r.refused_traces));
      expect(r.minute).toMatch(/:00\.000Z$/);
    }
  });

  it('counts as stored what GET /v1/traces lists (a trace split over OTLP requests once per request)', async () => {
    const rows = await statsOf(a);
    const listed = async (project: string) => {
      const res = await send({ method: 'GET', url: `/v1/traces?project_id=${project}&limit=1000`, headers: a.auth }, 200);
      return res.json<{ traces: { span_count: number }[] }>().traces;
    };
    const main = await listed(a.projectId);
    const stored = total(rows.filter((r) => r.project_id === a.projectId));
    expect(main).toHaveLength(stored.traces_stored);
    // The repeated OTLP span copy is counted stored but collapses onto its row.
    expect(main.reduce((n, t) => n + t.span_count, 0)).toBe(stored.spans_stored - 1);
    expect(await listed(split)).toHaveLength(1);
    expect(total(rows.filter((r) => r.project_id === split)).traces_stored).toBe(2);
  });

  it('moves the Prometheus counters by the same amounts, by source and reason', async () => {
    const after = await prometheus();
    const delta = (series: string) => (after.get(series) ?? 0) - (promBefore.get(series) ?? 0);
    for (const source of ['native', 'otlp'] as const) {
      const mine = expected(ledger.filter((e) => e.source === source));
      expect(delta(`looptrace_ingest_traces_received_total{source="${source}"}`), source).toBe(mine.traces_received);
      expect(delta(`looptrace_ingest_spans_received_total{source="${source}"}`), source).toBe(mine.spans_received);
      expect(delta(`looptrace_ingest_traces_stored_total{source="${source}"}`), source).toBe(mine.traces_stored);
      expect(delta(`looptrace_ingest_spans_stored_total{source="${source}"}`), source).toBe(mine.spans_stored);
      for (const [reason, n] of Object.entries(mine.refused)) {
        expect(delta(`looptrace_ingest_spans_refused_total{source="${source}",reason="${reason}"}`), `${source} ${reason}`).toBe(n);
      }
    }
  });

  it('pages by minute and project with a cursor that carries the range', async () => {
    const whole = await statsOf(a);
    expect(whole.length).toBeGreaterThan(3);
    expect(await statsOf(a, {}, 1)).toEqual(whole);
  });

  it('answers a query-scoped key and a viewer session', async () => {
    const key = await send({ method: 'POST', url: '/v1/apikeys', headers: a.auth, payload: { name: 'read', scopes: ['query'] } }, 201);
    const reader = bearer(key.json<{ secret: string }>().secret);
    const viewer = bearer(await sessionToken(a.tenantId, 'viewer'));
    for (const headers of [reader, viewer]) {
      const res = await send({ method: 'GET', url: `/v1/ingest/stats?from=${from}&project_id=${split}`, headers }, 200);
      expect(total(res.json<{ stats: Row[] }>().stats).traces_stored).toBe(2);
    }
  });

  it("keeps tenants apart: another tenant's project is a 404 with no numbers", async () => {
    const res = await send({ method: 'GET', url: `/v1/ingest/stats?from=${from}&project_id=${a.projectId}`, headers: other.auth }, 404);
    expect(res.json()).toEqual({ error: 'project not found', code: 'not_found', request_id: expect.any(String) });
    expect(await statsOf(other)).toEqual([]);
  });

  it('defaults to the last hour and refuses more than 24 hours', async () => {
    const res = await send({ method: 'GET', url: '/v1/ingest/stats', headers: a.auth }, 200);
    const body = res.json<{ from: string; to: string }>();
    expect(Date.parse(body.to) - Date.parse(body.from)).toBeGreaterThanOrEqual(60 * 60_000);
    expect(Date.parse(body.to) - Date.parse(body.from)).toBeLessThanOrEqual(61 * 60_000);
    const wide = await send({ method: 'GET', url: '/v1/ingest/stats?from=2026-01-01T00:00:00Z&to=2026-01-02T00:01:00Z', headers: a.auth }, 400);
    expect(wide.json()).toMatchObject({ code: 'bad_request', details: [{ path: 'query.from' }] });
    expect(wide.json().error).toContain('at most 1440');
  });
});

describe('counts decided in memory', () => {
  it('are written when the app closes (graceful shutdown), without waiting for the next second', async () => {
    const second = await startApp();
    const t = await createTenant(second.app);
    const res = await second.app.inject({ method: 'POST', url: '/v1/ingest/batch', headers: t.auth, payload: { traces: [aTrace(), { name: 'no spans' }] } });
    expect(res.statusCode).toBe(207);
    await second.close();
    const [row] = await ctx.stores.sql<{ traces_received: number; traces_stored: number; refused_traces: Record<string, number> }[]>`
      select traces_received, traces_stored, refused_traces from ingest_stats where tenant_id = ${t.tenantId}`;
    expect(row).toEqual({ traces_received: 2, traces_stored: 1, refused_traces: { validation: 1 } });
  });

  it('are kept when a flush fails and written, summed, by the next', async () => {
    const written: CountDelta[][] = [];
    let down = true;
    const repo = {
      add: async (deltas: readonly CountDelta[]) => {
        if (down) throw new Error('postgres is away');
        written.push([...deltas]);
      },
    } as unknown as IngestStatsRepository;
    const warnings: string[] = [];
    const counters = new IngestCounters(repo, { warn: (_details, message) => warnings.push(message) }, 60_000);
    const delta = (received: number, refused: number): CountDelta => ({
      ...emptyDelta(a.tenantId, a.projectId, 0),
      tracesReceived: received,
      spansReceived: received,
      refusedSpans: { validation: refused },
    });
    counters.count('native', delta(2, 1));
    await counters.flush();
    counters.count('native', delta(3, 2));
    down = false;
    await counters.close();
    expect(written).toEqual([[{ ...delta(5, 3), tracesReceived: 5 }]]);
    expect(warnings).toEqual(['ingest counts could not be written; kept in memory and retried', 'ingest counts are written again']);
  });
});
