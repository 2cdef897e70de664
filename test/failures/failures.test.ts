import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { ClusterRecorder } from '../../src/modules/failures/cluster-service.js';
import type { EventSink } from '../../src/modules/webhooks/types.js';
import { clusterRepository } from '../../src/modules/failures/clusters-repo.js';
import { failureCluster, failureClusterList, failureRule } from '../../src/modules/failures/schemas.js';
import { normalizeError } from '../../src/modules/failures/signature.js';
import { traceUuid } from '../../src/platform/otel-ids.js';
import { anOtlpRequest, anOtlpSpan, otelTraceId } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll } from '../helpers/trace-api.js';
import { drainOutbox, pollUntil, startAppWithWorkers } from '../helpers/workers.js';
import { queryKeyAuth } from '../builders/resources.js';

const QUEUES = ['failures-detect'] as const;
let ctx: TestContext;
let emit: MockInstance<EventSink['emit']>;
const start = async () => {
  ctx = await startAppWithWorkers(QUEUES);
  emit = vi.spyOn(ctx.app.services.webhooks, 'emit');
};
beforeAll(start);
afterAll(async () => ctx?.close());

type Cluster = ReturnType<typeof failureCluster.parse>;

const createRule = (t: TestTenant, body: Record<string, unknown>, headers = t.auth) =>
  ctx.app.inject({ method: 'POST', url: '/v1/failure-rules', headers, payload: body });
const aRule = (match: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ name: 'failures', match, ...extra });

async function clustersOf(t: TestTenant, query: Record<string, string | number> = {}): Promise<Cluster[]> {
  const pages = await listAll(ctx.app, t, '/v1/failures/clusters', 'clusters', { limit: 1000, ...query });
  return pages.flat() as unknown as Cluster[];
}

/** Waits until the tenant's clusters reach `spans` matching spans in all. */
const clustersCounting = (t: TestTenant, spans: number) =>
  pollUntil(() => clustersOf(t), (cs) => cs.reduce((n, c) => n + c.count, 0) >= spans, 300, 100);

const failing = (error: string, at = new Date('2026-11-10T08:00:00.000Z'), extra: Record<string, unknown> = {}) =>
  aTrace({ spans: [aSpan({ error, ...extra }, at)] });

const eventsOf = (tenantId: string) =>
  emit.mock.calls.filter(([tenant, event]) => tenant === tenantId && event.type === 'failure.detected').map(([, event]) => event);

describe('failure rules', () => {
  it('creates, lists, updates and deletes (delete: owner only)', async () => {
    const t = await createTenant(ctx.app);
    const created = await createRule(t, aRule({ failure_types: ['timeout'], latency_ms_over: 1000 }));
    expect(created.statusCode, created.body).toBe(201);
    const rule = failureRule.parse(created.json());
    expect(rule).toMatchObject({ enabled: true, project_id: null, match: { failure_types: ['timeout'], latency_ms_over: 1000 } });
    expect((await getJson(ctx.app, t, `/v1/failure-rules/${rule.id}`)).body).toEqual(rule);

    const patched = await ctx.app.inject({ method: 'PATCH', url: `/v1/failure-rules/${rule.id}`, headers: t.auth, payload: { enabled: false, match: { model: 'gpt-4o' } } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ enabled: false, name: 'failures', match: { model: 'gpt-4o' } });
    expect(patched.json().match).not.toHaveProperty('failure_types');

    await createRule(t, aRule({ status_codes: [500, 503] }, { name: 'second', project_id: t.projectId }));
    const pages = await listAll(ctx.app, t, '/v1/failure-rules', 'failure_rules', { limit: 1 });
    expect(pages.flat()).toHaveLength(2);
    expect((await getJson(ctx.app, t, '/v1/failure-rules', { enabled: 'true' })).body.failure_rules.map((r: { name: string }) => r.name)).toEqual(['second']);

    const member = bearer(await sessionToken(t.tenantId, 'member'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/failure-rules/${rule.id}`, headers: member })).statusCode).toBe(403);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/failure-rules/${rule.id}`, headers: owner })).statusCode).toBe(204);
    expect((await getJson(ctx.app, t, `/v1/failure-rules/${rule.id}`)).status).toBe(404);
  });

  it('validates at the edge: a condition is required, regexes are bounded and safe', async () => {
    const t = await createTenant(ctx.app);
    const other = await createTenant(ctx.app);
    for (const body of [
      aRule({}),
      aRule({ error_regex: '(a+)+$' }),
      aRule({ error_regex: '(' }),
      aRule({ error_regex: 'x'.repeat(501) }),
      aRule({ failure_types: ['bogus'] }),
      aRule({ failure_types: [] }),
      aRule({ latency_ms_over: -1 }),
      aRule({ unknown: 1 }),
      aRule({ model: 'x' }, { name: '' }),
    ]) {
      const res = await createRule(t, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await createRule(t, { name: 'no match' })).statusCode).toBe(422);
    expect((await createRule(t, aRule({ error_regex: 'x'.repeat(500) }))).statusCode).toBe(201);
    expect((await createRule(t, aRule({ model: 'x' }, { project_id: other.projectId }))).statusCode).toBe(404);
  });

  it('lets viewers and query keys read but not write, and keeps tenants apart', async () => {
    const [a, b] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const rule = (await createRule(a, aRule({ model: 'x' }))).json();
    const viewer = bearer(await sessionToken(a.tenantId, 'viewer'));
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/failure-rules', headers: viewer })).statusCode).toBe(200);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/failures/clusters', headers: viewer })).statusCode).toBe(200);
    expect((await createRule(a, aRule({ model: 'y' }), viewer)).statusCode).toBe(403);
    const reader = await queryKeyAuth(ctx.app, a.auth);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/failures/clusters', headers: reader })).statusCode).toBe(200);
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/failure-rules/${rule.id}`, headers: reader })).statusCode).toBe(200);
    const refused = await createRule(a, aRule({ model: 'y' }), reader);
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'scope_forbidden']);

    expect((await getJson(ctx.app, b, `/v1/failure-rules/${rule.id}`)).status).toBe(404);
    expect((await ctx.app.inject({ method: 'PATCH', url: `/v1/failure-rules/${rule.id}`, headers: b.auth, payload: { enabled: false } })).statusCode).toBe(404);
    const ownerB = bearer(await sessionToken(b.tenantId, 'owner'));
    expect((await ctx.app.inject({ method: 'DELETE', url: `/v1/failure-rules/${rule.id}`, headers: ownerB })).statusCode).toBe(404);
    expect((await getJson(ctx.app, b, '/v1/failure-rules')).body.failure_rules).toEqual([]);
  });
});

describe('signature normalization', () => {
  it('strips numbers, ids, quoted values, timestamps, emails and query values, and nothing that names the failure', () => {
    const a = normalizeError('Request 8812 to https://api.test/v1?key=abc&n=3 for bob@example.com timed out at 2026-11-24T10:00:00.123Z (trace 0191e3c4-5d6e-7f80-9a0b-1c2d3e4f5a6b, req_id a1b2c3d4e5f60718, "gpt-4o")');
    const b = normalizeError('request 7 to https://api.test/v1?key=zz&n=12 for eve@corp.example.org timed out at 2026-01-02 03:04:05 (trace 7c1e3c4a-0000-4000-8000-000000000000, req_id 99887766, "claude")');
    expect(a).toBe(b);
    expect(normalizeError("Can't parse 'x': Invalid JSON")).toBe("can't parse <q>: invalid json");
    expect(normalizeError('Rate limit exceeded')).not.toBe(normalizeError('Context length exceeded'));
  });
});

describe('detection', () => {
  it('clusters native and OTLP failures by themselves: same error modulo numbers and ids → one cluster, another error → another', async () => {
    const t = await createTenant(ctx.app);
    expect((await createRule(t, aRule({ error_contains: 'TIMED OUT' }))).statusCode).toBe(201);
    expect((await createRule(t, aRule({ error_regex: 'invalid json|schema' }, { name: 'bad output' }))).statusCode).toBe(201);
    const timeoutA = failing(`Request 8812 timed out after 30s (request ${randomUUID()})`);
    const timeoutB = failing(`Request 17 timed out after 5s (request ${randomUUID()})`, new Date('2026-11-10T08:05:00.000Z'));
    const invalid = failing('Invalid JSON in response at position 12');
    const healthy = aTrace();
    const unmatched = failing('Rate limit reached');
    await ingestTraces(ctx.app, t, [timeoutA, timeoutB, invalid, healthy, unmatched]);

    // An OTLP trace whose spans arrive in two requests: looked at after each rollup, counted once.
    const traceId = otelTraceId();
    const otlpSpan = (n: number) =>
      anOtlpSpan({ traceId, status: { code: 2, message: `Request ${n} timed out after ${n}s (request ${randomUUID()})` }, attributes: { 'gen_ai.request.model': 'gpt-4o-mini' } });
    const post = async (span: object) => {
      const res = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: t.auth, payload: anOtlpRequest([span]) });
      expect(res.statusCode, res.body).toBe(200);
    };
    await post(otlpSpan(1));
    await clustersCounting(t, 4);
    await post(otlpSpan(2));
    const clusters = await clustersCounting(t, 5);
    // Nothing left to happen: every candidate has been looked at.
    await drainOutbox(ctx, 'failure_candidates', t.tenantId, () => ctx.app.services.failureDetector.drain());
    expect(await clustersOf(t)).toEqual(clusters);
    // Looking at every trace again (what each later commit of spans to a trace brings about) counts nothing twice.
    const offered = await ctx.stores.sql`
      insert into failure_candidates (tenant_id, trace_id, project_id, started_at)
      select tenant_id, trace_id, project_id, started_at from trace_registry where tenant_id = ${t.tenantId}
      on conflict do nothing returning trace_id`;
    expect(offered).toHaveLength(6);
    await drainOutbox(ctx, 'failure_candidates', t.tenantId, () => ctx.app.services.failureDetector.drain());
    expect(await clustersOf(t)).toEqual(clusters);

    expect(clusters).toHaveLength(2);
    const timeout = clusters.find((c) => c.type === 'timeout')!;
    expect(timeout).toMatchObject({ count: 4, trace_count: 3, project_id: t.projectId, sample_error: expect.stringMatching(/timed out/) });
    expect(new Set(timeout.example_trace_ids)).toEqual(new Set([timeoutA.id, timeoutB.id, traceUuid(traceId)]));
    expect(timeout.signature).toMatch(/^[0-9a-f]{32}$/);
    const bad = clusters.find((c) => c.type === 'invalid_response')!;
    expect(bad).toMatchObject({ count: 1, trace_count: 1, example_trace_ids: [invalid.id], sample_error: 'Invalid JSON in response at position 12' });
    expect(failureClusterList.parse({ clusters, has_more: false, next_cursor: null })).toBeTruthy();
    expect((await getJson(ctx.app, t, `/v1/failures/clusters/${bad.id}`)).body).toEqual(bad);
    // A trace's own clusters (what its detail page links): by membership, not by example.
    expect(await clustersOf(t, { trace_id: invalid.id })).toEqual([bad]);
    expect(await clustersOf(t, { trace_id: traceUuid(traceId) })).toEqual([timeout]);
    expect(await clustersOf(t, { trace_id: healthy.id })).toEqual([]);
    expect(await clustersOf(t, { trace_id: unmatched.id })).toEqual([]);
    expect(await clustersOf(t, { trace_id: invalid.id, type: 'timeout' })).toEqual([]);
    const stranger = await createTenant(ctx.app);
    expect((await getJson(ctx.app, stranger, `/v1/failures/clusters/${bad.id}`)).status).toBe(404);
    expect(await clustersOf(stranger)).toEqual([]);
    expect(await clustersOf(stranger, { trace_id: invalid.id })).toEqual([]);
  });

  it('clusters a span without error text that a rule matches per rule, as RuleMatch', async () => {
    const t = await createTenant(ctx.app);
    await createRule(t, aRule({ latency_ms_over: 5_000, model: 'slow-model' }, { name: 'slow calls' }));
    const at = new Date('2026-11-10T09:00:00.000Z');
    const slow = aTrace({ spans: [aSpan({ model: 'slow-model', end_time: new Date(at.getTime() + 9_000).toISOString() }, at)] });
    const fast = aTrace({ spans: [aSpan({ model: 'slow-model' }, at)] });
    await ingestTraces(ctx.app, t, [slow, fast]);
    const [cluster] = await clustersCounting(t, 1);
    expect(cluster).toMatchObject({ type: 'RuleMatch', count: 1, example_trace_ids: [slow.id], sample_error: 'no error text; matched rule "slow calls"' });
  });

  it('keeps a signature across an app restart: the same failure lands in the same cluster', async () => {
    const t = await createTenant(ctx.app);
    await createRule(t, aRule({ failure_types: ['rate_limit'] }));
    await ingestTraces(ctx.app, t, [failing('429 Too Many Requests: retry after 20s', undefined, { status_code: 429 })]);
    const [before] = await clustersCounting(t, 1);
    // A concurrent test run drops process databases nobody is connected to: stay connected meanwhile.
    const hold = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
    await hold`select 1`;
    await ctx.close();
    await start().finally(() => hold.end());
    await ingestTraces(ctx.app, t, [failing('429 Too Many Requests: retry after 3s', undefined, { status_code: 429 })]);
    const after = await clustersCounting(t, 2);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: before!.id, signature: before!.signature, type: 'rate_limit', count: 2, trace_count: 2 });
  });

  it('fires failure.detected for a new cluster, and again only when it recurs after an hour without occurrences', async () => {
    const t = await createTenant(ctx.app);
    await createRule(t, aRule({ error_contains: 'upstream' }));
    const base = Date.parse('2026-11-12T10:00:00.000Z');
    const occur = async (offsetMinutes: number, expectedSpans: number) => {
      await ingestTraces(ctx.app, t, [failing(`upstream 502 after ${offsetMinutes} ms`, new Date(base + offsetMinutes * 60_000))]);
      return (await clustersCounting(t, expectedSpans))[0]!;
    };
    await occur(0, 1);
    expect(eventsOf(t.tenantId).map((e) => e.data.reason)).toEqual(['new']);
    await occur(10, 2);
    await occur(69, 3);
    expect(eventsOf(t.tenantId)).toHaveLength(1);
    const cluster = await occur(130, 4);
    const events = eventsOf(t.tenantId);
    expect(events.map((e) => e.data.reason)).toEqual(['new', 'recurred']);
    expect(events[1]).toMatchObject({
      project_id: t.projectId,
      data: { cluster_id: cluster.id, type: 'Unknown', signature: cluster.signature, count: 4, trace_count: 4, last_seen: cluster.last_seen },
    });
    expect(cluster.last_notified_at).not.toBeNull();
    expect(cluster.first_seen).toBe(new Date(base).toISOString());
  });
});

describe('cluster listing', () => {
  it('filters by type, project and last_seen, newest first, and pages with a cursor bound to its filters', async () => {
    const t = await createTenant(ctx.app);
    const other = (await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: t.auth, payload: { name: 'other' } })).json();
    await createRule(t, aRule({ error_regex: '.' }));
    const day = (d: number) => new Date(Date.UTC(2026, 10, d, 12));
    await ingestTraces(ctx.app, t, [
      failing('Request timed out', day(1)),
      failing('Rate limit reached', day(2)),
      failing('Invalid JSON output', day(3)),
      failing('maximum context length is 8192 tokens', day(4)),
      { ...failing('Request timed out', day(5)), project_id: other.id },
    ]);
    const all = await clustersCounting(t, 5);
    expect(all.map((c) => c.last_seen)).toEqual([5, 4, 3, 2, 1].map((d) => day(d).toISOString()));
    const paged = await listAll(ctx.app, t, '/v1/failures/clusters', 'clusters', { limit: 2 });
    expect(paged.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(paged.flat()).toEqual(all);

    expect((await clustersOf(t, { type: 'timeout' })).map((c) => c.project_id).sort()).toEqual([t.projectId, other.id].sort());
    expect((await clustersOf(t, { project_id: other.id })).map((c) => c.type)).toEqual(['timeout']);
    const window = await clustersOf(t, { from: day(2).toISOString(), to: day(4).toISOString() });
    expect(window.map((c) => c.type)).toEqual(['context_length', 'invalid_response', 'rate_limit']);

    expect((await getJson(ctx.app, t, '/v1/failures/clusters', { from: day(3).toISOString(), to: day(2).toISOString() })).status).toBe(400);
    const first = await getJson(ctx.app, t, '/v1/failures/clusters', { limit: 1 });
    const reused = await getJson(ctx.app, t, '/v1/failures/clusters', { limit: 1, type: 'timeout', cursor: first.body.next_cursor });
    expect([reused.status, reused.body.code]).toEqual([400, 'invalid_cursor']);
  });

  it('shows clusters recorded by other pipelines (RemediationRegression), counting a trace once', async () => {
    const t = await createTenant(ctx.app);
    const [traceA, traceB] = [randomUUID(), randomUUID()];
    const record = (traceId: string, score: number) =>
      ctx.app.services.failures.record(t.tenantId, {
        projectId: t.projectId,
        type: 'RemediationRegression',
        error: `eval score ${score} fell below baseline 0.82`,
        traceId,
        at: new Date('2026-11-20T10:00:00.000Z'),
      });
    const first = await record(traceA, 0.41);
    expect(await record(traceA, 0.41)).toMatchObject({ id: first.id, count: 1, trace_count: 1 });
    expect(await record(traceB, 0.37)).toMatchObject({ id: first.id, count: 2, trace_count: 2 });
    expect(await clustersOf(t, { type: 'RemediationRegression' })).toMatchObject([{ id: first.id, example_trace_ids: [traceA, traceB] }]);
    expect(eventsOf(t.tenantId).map((e) => e.data.reason)).toEqual(['new']);
  });

  it('takes the quiet period from its constructor (a recording sink sees each notification)', async () => {
    const t = await createTenant(ctx.app);
    const seen: string[] = [];
    const sink: EventSink = { emit: async (_tenant, event) => (seen.push(String(event.data.reason)), randomUUID()) };
    const recorder = new ClusterRecorder(clusterRepository(ctx.stores.sql), sink, null, 1_000);
    const at = (ms: number) => ({ projectId: t.projectId, type: 'RemediationRegression', error: 'regressed', traceId: randomUUID(), at: new Date(Date.UTC(2026, 10, 20) + ms) });
    await recorder.record(t.tenantId, at(0));
    await recorder.record(t.tenantId, at(999));
    await recorder.record(t.tenantId, at(1_999));
    expect(seen).toEqual(['new', 'recurred']);
  });
});
