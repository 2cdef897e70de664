import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlSignalRepository } from '../../src/modules/control/signals-repo.js';
import { ControlSignals } from '../../src/modules/control/signals-service.js';
import { traceUuid } from '../../src/platform/otel-ids.js';
import { buildPrivacyServices } from '../../src/modules/privacy/compose.js';
import { vectorErasureRepository } from '../../src/modules/search/erasure-repo.js';
import { VectorErasure } from '../../src/modules/search/erasure-service.js';
import { subjectTraceRepository } from '../../src/modules/traces/subject-repo.js';
import { SubjectTraceService } from '../../src/modules/traces/subject-service.js';
import { dataSubjectRequest, requestList } from '../../src/modules/privacy/schemas.js';
import { searchIndexRepository } from '../../src/modules/search/index-repo.js';
import { HnswIndexer } from '../../src/modules/search/indexer.js';
import { searchStateRepository } from '../../src/modules/search/state-repo.js';
import { anOtlpRequest, anOtlpSpan, ns, otelSpanId, otelTraceId } from '../builders/otlp.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers(['data-subject-requests', 'evals']);
});
afterAll(async () => ctx?.close());

type Headers = Record<string, string>;
const inject = (method: 'GET' | 'POST', url: string, headers: Headers, payload?: object) => ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

async function ok(method: 'GET' | 'POST', url: string, headers: Headers, payload?: object, status = method === 'POST' ? 201 : 200) {
  const res = await inject(method, url, headers, payload);
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
}

const owner = async (t: TestTenant) => bearer(await sessionToken(t.tenantId, 'owner'));

/** A unit vector of 8 dimensions along axis `i` (plus a little of the next, so no two are equal). */
const vector = (i: number) => Array.from({ length: 8 }, (_, j) => (j === i % 8 ? 1 : j === (i + 1) % 8 ? 0.25 : 0));

async function newProject(t: TestTenant): Promise<string> {
  return (await ok('POST', '/v1/projects', t.auth, { name: `dsr ${randomUUID()}` })).id;
}

/** An OTLP trace of two spans whose attributes carry `attributes`; waits for its rollup. */
async function otlpTrace(t: TestTenant, attributes: Record<string, unknown>): Promise<string> {
  const hex = otelTraceId();
  const rootId = otelSpanId();
  const spans = [
    anOtlpSpan({ traceId: hex, spanId: rootId, name: 'agent', startTimeUnixNano: ns(0), endTimeUnixNano: ns(2_000_000), attributes: { 'input.value': 'my order 1234', 'output.value': 'shipped', ...attributes } }),
    anOtlpSpan({ traceId: hex, parentSpanId: rootId, startTimeUnixNano: ns(1_000), endTimeUnixNano: ns(1_500_000), attributes: { 'gen_ai.request.model': 'gpt-4o-mini', ...attributes } }),
  ];
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/otlp/traces', headers: { ...t.auth, 'content-type': 'application/json' }, payload: JSON.stringify(anOtlpRequest(spans)) });
  expect(res.statusCode, res.body).toBe(200);
  const id = traceUuid(hex);
  const rows = await pollUntil(
    () => ctx.stores.ch.rows<{ span_count: number }>('test', 'SELECT span_count FROM traces FINAL WHERE tenant_id = {t:UUID} AND is_deleted = 0 AND id = {id:UUID}', { t: t.tenantId, id }),
    (r) => r.length === 1 && Number(r[0]!.span_count) === 2,
  );
  expect(rows).toHaveLength(1);
  return id;
}

async function evaluate(t: TestTenant, traceId: string): Promise<string> {
  const res = await inject('POST', '/v1/eval', t.auth, { trace_id: traceId, metric_name: 'mentions', config: { provider: 'builtin', preset: 'contains', params: { values: ['Paris'] } } });
  expect(res.statusCode, res.body).toBe(202);
  const id = res.json().eval_id as string;
  const done = await pollUntil(() => inject('GET', `/v1/eval/${id}`, t.auth), (r) => ['completed', 'failed'].includes(r.json().status));
  expect(done.json().status).toBe('completed');
  return id;
}

async function request(t: TestTenant, body: object) {
  return dataSubjectRequest.parse(await ok('POST', '/v1/data-subject-requests', await owner(t), body, 202));
}

async function finished(t: TestTenant, id: string) {
  const headers = await owner(t);
  const res = await pollUntil(() => inject('GET', `/v1/data-subject-requests/${id}`, headers), (r) => ['completed', 'failed'].includes(r.json().status), 600, 100);
  expect(res.statusCode, res.body).toBe(200);
  const body = dataSubjectRequest.parse(res.json());
  expect(body.status, JSON.stringify(body)).toBe('completed');
  return body;
}

/** Rows of these traces in every ClickHouse table that holds trace data, counted directly (deleted-row masks ignored). */
async function clickHouseRows(tenantId: string, traceIds: readonly string[]) {
  const ch = ctx.stores.ch;
  const hnsw = (await ch.rows<{ name: string }>('test', "SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'span_vectors_hnsw_')")).map((r) => r.name);
  const counts: Record<string, number> = {};
  for (const [table, column] of [['spans', 'trace_id'], ['trace_tokens', 'trace_id'], ['traces', 'id'], ['span_vectors', 'trace_id'], ...hnsw.map((h) => [h, 'trace_id'])] as [string, string][]) {
    const [visible] = await ch.rows<{ n: string }>('test', `SELECT count() AS n FROM ${table} WHERE tenant_id = {t:UUID} AND ${column} IN {ids:Array(UUID)}`, { t: tenantId, ids: traceIds });
    // apply_deleted_mask = 0 shows rows a lightweight delete only hid: none may be left on disk either.
    const [onDisk] = await ch.rows<{ n: string }>('test', `SELECT count() AS n FROM ${table} WHERE tenant_id = {t:UUID} AND ${column} IN {ids:Array(UUID)} SETTINGS apply_deleted_mask = 0`, { t: tenantId, ids: traceIds });
    counts[table] = Number(visible!.n);
    counts[`${table} (on disk)`] = Number(onDisk!.n);
  }
  return counts;
}

/** Rows naming these traces in every Postgres table that holds something of a trace, counted directly. */
async function postgresRows(tenantId: string, traceIds: readonly string[]): Promise<Record<string, number>> {
  const sql = ctx.stores.sql;
  const ids = traceIds as string[];
  const counts: Record<string, number> = {};
  for (const table of ['trace_registry', 'evaluations', 'feedback', 'dataset_items', 'failure_cluster_traces', 'control_signals', 'control_actions', 'eval_candidates', 'failure_candidates']) {
    const [row] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table} where tenant_id = $1 and trace_id = any($2::uuid[])`, [tenantId, ids]);
    counts[table] = row!.n;
  }
  const [runItems] = await sql<{ n: number }[]>`select count(*)::int as n from eval_run_items where trace_id = any(${ids}::uuid[])`;
  const [monitor] = await sql<{ n: number }[]>`select count(*)::int as n from prompt_deployment_traces where trace_id = any(${ids}::uuid[])`;
  const [examples] = await sql<{ n: number }[]>`select count(*)::int as n from failure_clusters where tenant_id = ${tenantId} and example_trace_ids && ${ids}::uuid[]`;
  return { ...counts, eval_run_items: runItems!.n, prompt_deployment_traces: monitor!.n, failure_clusters_examples: examples!.n };
}

const zeros = (counts: Record<string, number>) => Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));

describe('erasure', () => {
  it("removes every row of the subject's traces from ClickHouse and Postgres, and nothing else", { timeout: 240_000 }, async () => {
    const a = await createTenant(ctx.app, 'pro');
    const b = await createTenant(ctx.app, 'pro');
    const other = await newProject(a);
    const session = `sess-${randomUUID()}`;

    // Rules first: their outboxes (eval_candidates, failure_candidates) then take every trace stored.
    const rule = await ok('POST', '/v1/eval-rules', a.auth, { name: 'mentions Paris', metric_name: 'paris', config: { provider: 'builtin', preset: 'contains', params: { values: ['Paris'] } } });
    await ok('POST', '/v1/failure-rules', a.auth, { name: 'server errors', match: { status_codes: [500] } });

    const s1 = aTrace({ session_id: session, metadata: { plan: 'gold' }, spans: [aSpan({ embedding: vector(0), input: 'my card is 4111' }), aSpan({ embedding: vector(1), status_code: 500, error: 'upstream failed' })] });
    const s2 = aTrace({ project_id: other, session_id: session, spans: [aSpan({ embedding: vector(2) })] });
    const o1 = aTrace({ session_id: `sess-${randomUUID()}`, spans: [aSpan({ embedding: vector(3) })] });
    const o2 = aTrace({ project_id: other, spans: [aSpan({ embedding: vector(4) })] });
    await ingestTraces(ctx.app, a, [s1, s2, o1, o2]);
    const s3 = await otlpTrace(a, { 'session.id': session });
    const bTrace = aTrace({ session_id: session, spans: [aSpan({ embedding: vector(5) })] });
    await ingestTraces(ctx.app, b, [bTrace]);
    const subject = [s1.id, s2.id, s3];
    const kept = [o1.id, o2.id];

    // Big projects' vectors live in HNSW tables too (any project with a vector is "big" here).
    const indexer = new HnswIndexer(searchIndexRepository(ctx.stores.ch), searchStateRepository(ctx.stores.sql), { warn: () => {} }, { minVectors: 1, lagSeconds: 0 });
    await indexer.pass();
    const before = await clickHouseRows(a.tenantId, subject);
    expect(before).toMatchObject({ spans: 5, trace_tokens: 3, traces: 3, span_vectors: 3, span_vectors_hnsw_8: 3 });

    for (const id of [...subject, o1.id]) await evaluate(a, id);
    for (const id of [s1.id, s3, o1.id]) await ok('POST', '/v1/feedback', a.auth, { trace_id: id, score: 0.9, comment: 'the user said their name is Ada' });
    const dataset = (await ok('POST', '/v1/datasets', a.auth, { name: 'regressions' })).id;
    await ok('POST', `/v1/datasets/${dataset}/items`, a.auth, { items: [...subject, o1.id].map((id) => ({ trace_id: id, expected: 'Paris', label: 'pass' })) });
    const run = await ok('POST', `/v1/datasets/${dataset}/runs`, a.auth, { eval_version_id: rule.current_version_id });
    expect(run.item_count).toBe(4);
    for (const traceId of [s1.id, o1.id]) {
      await ctx.app.services.failures.record(a.tenantId, { projectId: a.projectId, type: 'timeout', error: 'upstream timed out for Ada', traceId, at: new Date() });
      // A control action on the trace (its input and output are trace content): a fixture row.
      await ctx.stores.sql`
        insert into control_actions (id, tenant_id, project_id, trace_id, policy_id, chain_id, step_index, type, status, input, output)
        values (${randomUUID()}, ${a.tenantId}, ${a.projectId}, ${traceId}, ${randomUUID()}, ${randomUUID()}, 0, 'retry', 'executed', 'retry for Ada', 'ok')`;
    }
    const pgBefore = await postgresRows(a.tenantId, subject);
    for (const table of ['trace_registry', 'evaluations', 'feedback', 'dataset_items', 'failure_cluster_traces', 'control_signals', 'control_actions', 'eval_candidates', 'failure_candidates', 'eval_run_items', 'failure_clusters_examples']) {
      expect(pgBefore[table], table).toBeGreaterThan(0);
    }
    const keptBefore = { ch: await clickHouseRows(a.tenantId, kept), pg: await postgresRows(a.tenantId, kept) };
    const otherTenantBefore = await clickHouseRows(b.tenantId, [bTrace.id]);

    const created = await request(a, { type: 'erasure', subject: { session_id: session } });
    expect(created).toMatchObject({ type: 'erasure', subject_kind: 'session_id', status: 'queued', download_url: null, expires_at: null });
    expect(JSON.stringify(created)).not.toContain(session);
    const done = await finished(a, created.id);
    expect(done.counts).toEqual({ traces: 3, spans: 5, vectors: 3, evaluations: 3, feedback: 2, dataset_items: 3 });
    expect(done.download_url).toBeNull();

    expect(await clickHouseRows(a.tenantId, subject)).toEqual(zeros(before));
    const bySubject = await ctx.stores.ch.rows<{ n: string }>(
      'test',
      "SELECT (SELECT count() FROM traces WHERE tenant_id = {t:UUID} AND session_id = {s:String}) + (SELECT count() FROM spans WHERE tenant_id = {t:UUID} AND position(metadata, {s:String}) > 0) AS n",
      { t: a.tenantId, s: session },
    );
    expect(Number(bySubject[0]!.n)).toBe(0);
    const pgAfter = await postgresRows(a.tenantId, subject);
    expect(pgAfter).toEqual(zeros(pgAfter));

    // The other subject and the other tenant (same session id) are untouched.
    expect({ ch: await clickHouseRows(a.tenantId, kept), pg: await postgresRows(a.tenantId, kept) }).toEqual(keptBefore);
    expect(await clickHouseRows(b.tenantId, [bTrace.id])).toEqual(otherTenantBefore);
    expect((await inject('GET', `/v1/traces/${o1.id}`, a.auth)).statusCode).toBe(200);
    expect((await inject('GET', `/v1/traces/${bTrace.id}`, b.auth)).statusCode).toBe(200);
    expect((await inject('GET', `/v1/traces/${s1.id}`, a.auth)).statusCode).toBe(404);
    const [cluster] = (await ok('GET', '/v1/failures/clusters', a.auth)).clusters;
    expect(cluster).toMatchObject({ trace_count: 1, example_trace_ids: [o1.id], sample_error: null });
    expect(await ok('GET', `/v1/datasets/${dataset}/runs/${run.id}`, a.auth)).toMatchObject({ item_count: 1 });

    // Audited, twice (the request and its outcome), with kinds and counts only.
    const audit = await ctx.stores.sql<{ action: string; actor_type: string; details: object }[]>`
      select action, actor_type, details from audit_log where tenant_id = ${a.tenantId} and resource_id = ${created.id} order by seq`;
    expect(audit).toEqual([
      { action: 'data_subject_request.create', actor_type: 'user', details: { type: 'erasure', subject_kind: 'session_id' } },
      { action: 'data_subject_request.completed', actor_type: 'system', details: { type: 'erasure', subject_kind: 'session_id', counts: done.counts } },
    ]);
    const [stored] = await ctx.stores.sql`select * from data_subject_requests where id = ${created.id}`;
    expect(stored!.subject_value).toBeNull();
    expect(JSON.stringify(stored)).not.toContain(session);
    expect((await ctx.stores.sql`select 1 from data_subject_request_traces where request_id = ${created.id}`).length).toBe(0);

    // Safe to run again: the same request run a second time finds nothing more and changes nothing.
    await ctx.stores.sql`update data_subject_requests set status = 'queued', subject_value = ${session} where id = ${created.id}`;
    expect(await ctx.app.services.dataSubjectRequests.process(created.id)).toBe('completed');
    expect((await finished(a, created.id)).counts).toEqual(done.counts);
    expect({ ch: await clickHouseRows(a.tenantId, kept), pg: await postgresRows(a.tenantId, kept) }).toEqual(keptBefore);
  });
  it('resumes an attempt that failed half-way without counting anything twice', { timeout: 120_000 }, async () => {
    const t = await createTenant(ctx.app, 'pro');
    const external = `ext-${randomUUID()}`;
    const traces = [aTrace({ external_id: external, spans: [aSpan({ embedding: vector(0) }), aSpan()] }), aTrace({ external_id: external })];
    await ingestTraces(ctx.app, t, traces);
    for (const trace of traces) await ok('POST', '/v1/feedback', t.auth, { trace_id: trace.id, score: 1 });
    const ids = traces.map((x) => x.id);

    // A service of its own, queueing nothing (the test runs the attempts), whose feedback erasure fails once.
    const s = ctx.app.services;
    let failures = 1;
    const build = () =>
      buildPrivacyServices({
        sql: ctx.stores.sql, jobs: { add: async () => {} }, secretKey: ctx.stores.config.secretKey, log: { warn: () => {} },
        modules: {
          registry: s.traceRegistry, evals: s.evals, datasets: s.datasets, datasetRuns: s.datasetRuns, failures: s.failures,
          controlActions: s.controlActions, controlSignals: new ControlSignals(controlSignalRepository(ctx.stores.sql)), promptDeployments: s.promptDeployments,
          traces: new SubjectTraceService(subjectTraceRepository(ctx.stores.ch)), vectors: new VectorErasure(vectorErasureRepository(ctx.stores.ch)),
          feedback: {
            countForTraces: (tenantId, traceIds) => s.feedback.countForTraces(tenantId, traceIds),
            forTraces: (tenantId, traceIds) => s.feedback.forTraces(tenantId, traceIds),
            eraseTraces: async (tenantId, traceIds) => {
              if (failures-- > 0) throw new Error('Postgres went away');
              return s.feedback.eraseTraces(tenantId, traceIds);
            },
          },
        },
      });
    const service = build();
    const { id } = await service.create(t.tenantId, randomUUID(), { type: 'erasure', subject: { external_id: external } });
    await expect(service.process(id)).rejects.toThrow('Postgres went away');
    // The first attempt took the ClickHouse rows and counted everything, then gave the request back.
    expect(await service.get(t.tenantId, id)).toMatchObject({ status: 'queued', counts: { traces: 2, spans: 3, vectors: 1, feedback: 2 } });
    expect(await clickHouseRows(t.tenantId, ids)).toMatchObject({ spans: 0, traces: 0, span_vectors: 0 });
    expect((await postgresRows(t.tenantId, ids)).feedback).toBe(2);

    // The retry finds nothing left in ClickHouse by the subject, and still erases the rest of the same traces.
    expect(await service.process(id)).toBe('completed');
    expect(await service.get(t.tenantId, id)).toMatchObject({ status: 'completed', counts: { traces: 2, spans: 3, vectors: 1, evaluations: 0, feedback: 2, dataset_items: 0 } });
    const pg = await postgresRows(t.tenantId, ids);
    expect(pg).toEqual(zeros(pg));
    const [row] = await ctx.stores.sql`select attempts, subject_value from data_subject_requests where id = ${id}`;
    expect(row).toEqual({ attempts: 2, subject_value: null });
  });
});

describe('export', () => {
  it("writes exactly the subject's records as JSONL, for the owner of the tenant only", { timeout: 180_000 }, async () => {
    const c = await createTenant(ctx.app, 'pro');
    const d = await createTenant(ctx.app, 'pro');
    const other = await newProject(c);
    const user = `user-${randomUUID()}`;
    const byTag = aTrace({ tag_map: { user_id: user }, spans: [aSpan(), aSpan({ name: 'tool call', type: 'tool' })] });
    const byMetadata = aTrace({ project_id: other, metadata: { user_id: user } });
    const byTagText = aTrace({ tags: [`user_id:${user}`] });
    const someoneElse = aTrace({ tag_map: { user_id: `user-${randomUUID()}` } });
    await ingestTraces(ctx.app, c, [byTag, byMetadata, byTagText, someoneElse]);
    const byAttribute = await otlpTrace(c, { 'enduser.id': user });
    const subject = new Set([byTag.id, byMetadata.id, byTagText.id, byAttribute]);

    await evaluate(c, byTag.id);
    await evaluate(c, someoneElse.id);
    await ok('POST', '/v1/feedback', c.auth, { trace_id: byAttribute, score: 0.2 });
    await ok('POST', '/v1/feedback', c.auth, { trace_id: someoneElse.id, score: 0.2 });
    const dataset = (await ok('POST', '/v1/datasets', c.auth, { name: 'exported' })).id;
    await ok('POST', `/v1/datasets/${dataset}/items`, c.auth, { items: [{ trace_id: byMetadata.id }, { trace_id: someoneElse.id }] });

    const created = await request(c, { type: 'export', subject: { user_id: user } });
    const done = await finished(c, created.id);
    expect(done.counts).toEqual({ traces: 4, spans: 6, vectors: 0, evaluations: 1, feedback: 1, dataset_items: 1 });
    expect(done.download_url).toBe(`/v1/data-subject-requests/${created.id}/download`);
    expect(Date.parse(done.expires_at!) - Date.parse(done.completed_at!)).toBe(7 * 86_400_000);

    const file = await inject('GET', done.download_url!, await owner(c));
    expect(file.statusCode, file.body).toBe(200);
    expect(file.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(file.headers['content-disposition']).toMatch(/^attachment; filename=".+\.jsonl"$/);
    const lines = file.body.trimEnd().split('\n').map((l) => JSON.parse(l) as { kind: string; id: string; trace_id?: string });
    const of = (kind: string) => lines.filter((l) => l.kind === kind);
    expect(new Set(lines.map((l) => l.kind))).toEqual(new Set(['trace', 'span', 'evaluation', 'feedback', 'dataset_item']));
    expect(new Set(of('trace').map((l) => l.id))).toEqual(subject);
    expect(of('span')).toHaveLength(6);
    for (const l of lines.filter((x) => x.kind !== 'trace')) expect(subject.has(l.trace_id!), JSON.stringify(l)).toBe(true);
    expect(of('evaluation')).toHaveLength(1);
    expect(of('feedback')).toHaveLength(1);
    expect(of('dataset_item')).toMatchObject([{ trace_id: byMetadata.id, dataset_id: dataset }]);
    expect(of('trace').find((l) => l.id === byTag.id)).toMatchObject({ tag_map: { user_id: user }, name: byTag.name });

    // Owner session of this tenant only.
    expect((await inject('GET', done.download_url!, await owner(d))).statusCode).toBe(404);
    expect((await inject('GET', `/v1/data-subject-requests/${created.id}`, await owner(d))).statusCode).toBe(404);
    for (const role of ['member', 'viewer'] as const) {
      const res = await inject('GET', done.download_url!, bearer(await sessionToken(c.tenantId, role)));
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('role_forbidden');
    }
    expect((await inject('GET', done.download_url!, c.auth)).json()).toMatchObject({ code: 'session_required' });

    // An erasure of the same subject takes the export's file with it.
    const erased = await finished(c, (await request(c, { type: 'erasure', subject: { user_id: user } })).id);
    expect(erased.counts).toMatchObject({ traces: 4, spans: 6, evaluations: 1, feedback: 1, dataset_items: 1 });
    const gone = await inject('GET', done.download_url!, await owner(c));
    expect(gone.statusCode).toBe(410);
    expect(gone.json().code).toBe('data_subject_request.export_expired');
    expect((await ctx.stores.sql`select 1 from data_subject_exports where request_id = ${created.id}`).length).toBe(0);
    const erasureFile = await inject('GET', `/v1/data-subject-requests/${erased.id}/download`, await owner(c));
    expect(erasureFile.json()).toMatchObject({ code: 'data_subject_request.not_export' });

    // Listed newest first, a page at a time.
    const first = requestList.parse(await ok('GET', '/v1/data-subject-requests?limit=1', await owner(c)));
    expect(first.requests.map((r) => r.id)).toEqual([erased.id]);
    const rest = requestList.parse(await ok('GET', `/v1/data-subject-requests?limit=1&cursor=${first.next_cursor}`, await owner(c)));
    expect(rest).toMatchObject({ requests: [{ id: created.id, type: 'export' }], has_more: false, next_cursor: null });
    expect(requestList.parse(await ok('GET', '/v1/data-subject-requests', await owner(d))).requests).toEqual([]);
  });
});

describe('POST /v1/data-subject-requests', () => {
  it('is for owner sessions only: members, viewers and API keys are refused with 403', async () => {
    const t = await createTenant(ctx.app);
    const body = { type: 'export', subject: { session_id: 'x' } };
    for (const role of ['member', 'viewer'] as const) {
      const headers = bearer(await sessionToken(t.tenantId, role));
      expect((await inject('POST', '/v1/data-subject-requests', headers, body)).json()).toMatchObject({ code: 'role_forbidden' });
      expect((await inject('GET', '/v1/data-subject-requests', headers)).statusCode).toBe(403);
    }
    const byKey = await inject('POST', '/v1/data-subject-requests', t.auth, body);
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().code).toBe('session_required');
    expect((await inject('GET', '/v1/data-subject-requests', t.auth)).statusCode).toBe(403);
    expect((await ctx.stores.sql`select 1 from data_subject_requests where tenant_id = ${t.tenantId}`).length).toBe(0);
  });

  it('takes exactly one subject identifier of 1 to 256 characters (400 otherwise, 422 when missing)', async () => {
    const t = await createTenant(ctx.app);
    const headers = await owner(t);
    const bad: object[] = [
      { type: 'erasure', subject: {} },
      { type: 'erasure', subject: { session_id: 'a', user_id: 'b' } },
      { type: 'erasure', subject: { session_id: '' } },
      { type: 'erasure', subject: { external_id: 'x'.repeat(257) } },
      { type: 'erasure', subject: { email: 'ada@example.com' } },
      { type: 'erasure', subject: { session_id: 42 } },
      { type: 'delete', subject: { session_id: 'a' } },
      { type: 'erasure', subject: 'a' },
    ];
    for (const body of bad) {
      const res = await inject('POST', '/v1/data-subject-requests', headers, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().code).toBe('bad_request');
    }
    expect((await inject('POST', '/v1/data-subject-requests', headers, { type: 'erasure' })).json()).toMatchObject({ code: 'validation_error' });
    expect((await ctx.stores.sql`select 1 from data_subject_requests where tenant_id = ${t.tenantId}`).length).toBe(0);
    expect((await inject('GET', `/v1/data-subject-requests/${randomUUID()}`, headers)).statusCode).toBe(404);
  });
});
