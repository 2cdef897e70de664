import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { project as projectSchema } from '../../src/modules/projects/schemas.js';
import { HnswIndexer } from '../../src/modules/search/indexer.js';
import { searchIndexRepository } from '../../src/modules/search/index-repo.js';
import { searchStateRepository } from '../../src/modules/search/state-repo.js';
import { cutoffOf, type SweepResult } from '../../src/modules/retention/service.js';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import { expiringTable, monthlyPartitionEnd } from '../../src/stores/clickhouse-expiry.js';
import { bind, TenantWhere } from '../../src/stores/clickhouse-where.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { bearer, createTenant, sessionToken, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import { aDataset, aFeedback, create } from '../builders/resources.js';

const DAY_MS = 86_400_000;
const quiet = { warn: () => {} };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX });
});
afterAll(async () => ctx?.close());

const patchProject = (id: string, headers: Record<string, string>, payload: object) =>
  ctx.app.inject({ method: 'PATCH', url: `/v1/projects/${id}`, headers, payload });

/** `YYYYMM` of an instant: the monthly partition id of rows at that time. */
const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7).replace('-', '');

describe('PATCH /v1/projects/{id} retention_days', () => {
  it('is owner only: a member (session or API key) may rename but not change retention', async () => {
    const t = await createTenant(ctx.app);
    const member = bearer(await sessionToken(t.tenantId, 'member'));
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));

    const refused = await patchProject(t.projectId, member, { retention_days: 30 });
    expect([refused.statusCode, refused.json().code]).toEqual([403, 'role_forbidden']);
    expect((await patchProject(t.projectId, t.auth, { retention_days: 30, name: 'x' })).json().code).toBe('role_forbidden');
    const renamed = await patchProject(t.projectId, member, { name: 'renamed by a member' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'renamed by a member', retention_days: null });

    const set = await patchProject(t.projectId, owner, { retention_days: 30 });
    expect(set.statusCode, set.body).toBe(200);
    expect(projectSchema.parse(set.json())).toMatchObject({ id: t.projectId, retention_days: 30, name: 'renamed by a member' });
    const read = await ctx.app.inject({ method: 'GET', url: `/v1/projects/${t.projectId}`, headers: t.auth });
    expect(read.json().retention_days).toBe(30);
    const list = await ctx.app.inject({ method: 'GET', url: '/v1/projects', headers: t.auth });
    expect(list.json().projects.find((p: { id: string }) => p.id === t.projectId).retention_days).toBe(30);
    // Renaming leaves retention alone; null keeps forever again.
    expect((await patchProject(t.projectId, member, { name: 'again' })).json().retention_days).toBe(30);
    const cleared = await patchProject(t.projectId, owner, { retention_days: null });
    expect([cleared.statusCode, cleared.json().retention_days]).toEqual([200, null]);

    const audit = await ctx.stores.sql<{ details: Record<string, unknown>; actor_type: string }[]>`
      select details, actor_type from audit_log
      where tenant_id = ${t.tenantId} and action = 'project.update' and details ? 'retention_days' order by seq`;
    expect(audit.map((a) => a.details.retention_days)).toEqual([30, null]);
  });

  it('validates: an integer from 1 to 3650, or null', async () => {
    const t = await createTenant(ctx.app);
    const owner = bearer(await sessionToken(t.tenantId, 'owner'));
    for (const value of [0, 3651, 'x', 1.5, -1, true]) {
      const res = await patchProject(t.projectId, owner, { retention_days: value });
      expect([value, res.statusCode, res.json().code]).toEqual([value, 400, 'bad_request']);
    }
    for (const value of [1, 3650]) {
      expect((await patchProject(t.projectId, owner, { retention_days: value })).json().retention_days).toBe(value);
    }
    const other = await createTenant(ctx.app);
    expect((await patchProject(t.projectId, bearer(await sessionToken(other.tenantId, 'owner')), { retention_days: 5 })).statusCode).toBe(404);
  });
});

interface Group {
  tenantId: string;
  projectId: string;
  traceIds: string[];
  spanIds: string[];
  /** Rows of this group lie before the cutoff (time-keyed tables) */
  expired: boolean;
}

describe('retention sweep', () => {
  const now = Date.now();
  const cutoffMs = cutoffOf(now, 30);
  let a: TestTenant;
  let b: TestTenant;
  let kept: { id: string }; // a second project of tenant a, without retention
  let groups: Record<'expired' | 'recent' | 'keptOld' | 'keptRecent' | 'otherOld' | 'otherRecent', Group>;
  let datasetItem: string;
  let result: SweepResult;
  let before: Record<string, Record<string, number>>;
  let auditBefore: { seq: number; hash: string }[];

  /** `n` traces of two spans each (the first fails with 'boom …'), starting around `at`, in `project`. */
  const traces = (n: number, at: number, project: string, tenantId: string, expired: boolean): { group: Group; body: object[] } => {
    const body = Array.from({ length: n }, (_, i) => {
      const start = new Date(at + i * 61_000);
      return aTrace({
        project_id: project,
        spans: [
          aSpan({ error: 'boom: upstream said no', embedding: [1, i + 1, 0.5, 0.25] }, start),
          aSpan({ embedding: [0.5, 1, i + 2, 0.25] }, new Date(start.getTime() + 600)),
        ],
      });
    });
    const group = {
      tenantId,
      projectId: project,
      traceIds: body.map((t) => t.id),
      spanIds: body.flatMap((t) => t.spans.map((s) => s.id)),
      expired,
    };
    return { group, body };
  };

  const ch = <T>(query: string, params: Record<string, unknown> = {}) => ctx.stores.ch.rows<T>('test.retention', query, params);
  const count = async (query: string, params: Record<string, unknown>) => Number((await ch<{ n: string }>(query, params))[0]!.n);

  /** Row counts of everything a group's traces left, by table, in both stores. */
  async function snapshot(g: Group): Promise<Record<string, number>> {
    const p = { tenant: g.tenantId, project: g.projectId, ids: g.traceIds, spans: g.spanIds, cutoff: new Date(cutoffMs).toISOString().slice(0, 19).replace('T', ' ') };
    const side = g.expired ? '<' : '>=';
    const sql = ctx.stores.sql;
    const ids = g.traceIds;
    const pg = async (q: Promise<{ n: number }[]>) => (await q)[0]!.n;
    const time = (column: string) => (g.expired ? sql`${sql(column)} < ${new Date(cutoffMs)}` : sql`${sql(column)} >= ${new Date(cutoffMs)}`);
    return {
      spans: await count('SELECT count() AS n FROM spans WHERE tenant_id = {tenant:UUID} AND trace_id IN {ids:Array(UUID)}', p),
      traces: await count('SELECT count() AS n FROM traces WHERE tenant_id = {tenant:UUID} AND id IN {ids:Array(UUID)}', p),
      trace_tokens: await count('SELECT count() AS n FROM trace_tokens WHERE tenant_id = {tenant:UUID} AND trace_id IN {ids:Array(UUID)}', p),
      span_vectors: await count('SELECT count() AS n FROM span_vectors WHERE tenant_id = {tenant:UUID} AND span_id IN {spans:Array(UUID)}', p),
      span_vectors_hnsw_4: await count('SELECT count() AS n FROM span_vectors_hnsw_4 WHERE tenant_id = {tenant:UUID} AND span_id IN {spans:Array(UUID)}', p),
      trace_metrics_1m: await count(
        `SELECT count() AS n FROM trace_metrics_1m WHERE tenant_id = {tenant:UUID} AND project_id = {project:UUID} AND trace_count > 0 AND minute ${side} {cutoff:DateTime('UTC')}`,
        p,
      ),
      trace_registry: await pg(sql`select count(*)::int as n from trace_registry where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      evaluations: await pg(sql`select count(*)::int as n from evaluations where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      feedback: await pg(sql`select count(*)::int as n from feedback where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      failure_cluster_traces: await pg(sql`select count(*)::int as n from failure_cluster_traces where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      cluster_examples: await pg(sql`select count(*)::int as n from failure_clusters where tenant_id = ${g.tenantId} and example_trace_ids && ${ids}::uuid[]`),
      control_signals: await pg(sql`select count(*)::int as n from control_signals where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      eval_candidates: await pg(sql`select count(*)::int as n from eval_candidates where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      failure_candidates: await pg(sql`select count(*)::int as n from failure_candidates where tenant_id = ${g.tenantId} and trace_id = any(${ids}::uuid[])`),
      webhook_events: await pg(sql`select count(*)::int as n from webhook_events where tenant_id = ${g.tenantId} and project_id = ${g.projectId} and ${time('created_at')}`),
      webhook_deliveries: await pg(sql`
        select count(*)::int as n from webhook_deliveries d join webhook_events e on e.id = d.event_id
        where e.tenant_id = ${g.tenantId} and e.project_id = ${g.projectId} and ${time('e.created_at')}`),
      anomalies: await pg(sql`select count(*)::int as n from anomalies where tenant_id = ${g.tenantId} and project_id = ${g.projectId} and ${time('window_start')}`),
      // Older than an hour: the counts of this test's own API requests (this minute) keep arriving from memory.
      ingest_stats: await pg(sql`
        select count(*)::int as n from ingest_stats
        where tenant_id = ${g.tenantId} and project_id = ${g.projectId} and ${time('minute')} and minute < ${new Date(now - 3_600_000)}`),
    };
  }

  /** Rows that only the API or a job makes elsewhere, written here directly: events with a delivery, anomalies, ingest counts, outbox rows. */
  async function sideRows(g: Group, at: number): Promise<void> {
    const sql = ctx.stores.sql;
    const [hook] = await sql<{ id: string }[]>`
      insert into webhooks (id, tenant_id, url, secret_ciphertext, events)
      values (${newId()}, ${g.tenantId}, 'https://hooks.example.test/x', 'sealed', '{failure.detected}') returning id`;
    for (const i of [0, 1]) {
      const event = newId();
      const created = new Date(at + i * 1_000);
      await sql`insert into webhook_events (id, tenant_id, project_id, type, data, created_at)
                values (${event}, ${g.tenantId}, ${g.projectId}, 'failure.detected', ${sql.json({ trace_id: g.traceIds[0]! })}, ${created})`;
      const dispatch = newId();
      await sql`insert into webhook_dispatches (id, tenant_id, webhook_id, event_id, state, created_at)
                values (${dispatch}, ${g.tenantId}, ${hook!.id}, ${event}, 'failed', ${created})`;
      await sql`insert into webhook_deliveries (id, tenant_id, webhook_id, event_id, attempt, status, duration_ms, created_at)
                values (${newId()}, ${g.tenantId}, ${hook!.id}, ${event}, 1, 500, 12, ${created})`;
    }
    await sql`insert into anomalies (id, tenant_id, project_id, metric, window_start, window_end, observed, expected, score, severity)
              values (${newId()}, ${g.tenantId}, ${g.projectId}, 'latency_p95', ${new Date(at)}, ${new Date(at + 300_000)}, 900, 100, 9, 'critical')`;
    await sql`insert into ingest_stats (tenant_id, minute, project_id, traces_received, traces_stored, spans_received, spans_stored)
              values (${g.tenantId}, ${new Date(Math.floor(at / 60_000) * 60_000)}, ${g.projectId}, 2, 2, 4, 4)`;
    const rows = g.traceIds.map((traceId) => ({ tenant_id: g.tenantId, trace_id: traceId, project_id: g.projectId, started_at: new Date(at) }));
    await sql`insert into eval_candidates ${sql(rows)} on conflict do nothing`;
    await sql`insert into failure_candidates ${sql(rows)} on conflict do nothing`;
  }

  beforeAll(async () => {
    [a, b] = [await createTenant(ctx.app), await createTenant(ctx.app)];
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/projects', headers: a.auth, payload: { name: 'kept forever' } });
    kept = created.json();
    // Tenant a's failure rule: its spans with 'boom' join clusters (memberships, examples, control signals).
    const rule = await ctx.app.inject({ method: 'POST', url: '/v1/failure-rules', headers: a.auth, payload: { name: 'boom', match: { error_regex: 'boom' } } });
    expect(rule.statusCode, rule.body).toBe(201);

    const expiredOld = traces(3, now - 40 * DAY_MS, a.projectId, a.tenantId, true);
    const ancient = traces(2, now - 120 * DAY_MS, a.projectId, a.tenantId, true);
    const expired = { ...expiredOld.group, traceIds: [...expiredOld.group.traceIds, ...ancient.group.traceIds], spanIds: [...expiredOld.group.spanIds, ...ancient.group.spanIds] };
    const recent = traces(2, now - DAY_MS, a.projectId, a.tenantId, false);
    const keptOld = traces(3, now - 40 * DAY_MS, kept.id, a.tenantId, true);
    const keptRecent = traces(2, now - DAY_MS, kept.id, a.tenantId, false);
    const otherOld = traces(3, now - 40 * DAY_MS, b.projectId, b.tenantId, true);
    const otherRecent = traces(2, now - DAY_MS, b.projectId, b.tenantId, false);
    await ingestTraces(ctx.app, a, [...expiredOld.body, ...ancient.body, ...recent.body, ...keptOld.body, ...keptRecent.body]);
    await ingestTraces(ctx.app, b, [...otherOld.body, ...otherRecent.body]);
    groups = { expired, recent: recent.group, keptOld: keptOld.group, keptRecent: keptRecent.group, otherOld: otherOld.group, otherRecent: otherRecent.group };

    // Derived rows through the real paths: evaluations, feedback, failure clusters, the rollup, HNSW copies.
    for (const [tenant, g] of [[a, groups.expired], [a, groups.recent], [a, groups.keptOld], [a, groups.keptRecent], [b, groups.otherOld], [b, groups.otherRecent]] as const) {
      for (const traceId of g.traceIds) {
        const evaluation = await ctx.app.inject({
          method: 'POST', url: '/v1/eval', headers: tenant.auth,
          payload: { trace_id: traceId, metric_name: 'exact', config: { provider: 'builtin', preset: 'exact_match', params: { expected: 'Paris.' } } },
        });
        expect(evaluation.statusCode, evaluation.body).toBe(202);
        await create(ctx.app, '/v1/feedback', tenant.auth, aFeedback(traceId));
      }
    }
    await ctx.app.services.failureDetector.drain();
    await ctx.app.services.metricsRollup.drain();
    const indexer = new HnswIndexer(searchIndexRepository(ctx.stores.ch), searchStateRepository(ctx.stores.sql), quiet, { minVectors: 1, lagSeconds: 0 });
    expect((await indexer.pass()).vectors).toBeGreaterThan(0);
    await sideRows(groups.expired, now - 40 * DAY_MS);
    await sideRows(groups.recent, now - DAY_MS);
    await sideRows(groups.keptOld, now - 40 * DAY_MS);
    await sideRows(groups.otherOld, now - 40 * DAY_MS);

    // A curated copy of an expired trace: kept.
    const dataset = await create(ctx.app, '/v1/datasets', a.auth, aDataset({ name: 'keep' }));
    const items = await ctx.app.inject({ method: 'POST', url: `/v1/datasets/${dataset.id}/items`, headers: a.auth, payload: { trace_id: groups.expired.traceIds[0] } });
    expect(items.statusCode, items.body).toBe(201);
    datasetItem = items.json().items[0].id;

    const owner = bearer(await sessionToken(a.tenantId, 'owner'));
    expect((await patchProject(a.projectId, owner, { retention_days: 30 })).statusCode).toBe(200);

    before = {};
    for (const [name, g] of Object.entries(groups)) before[name] = await snapshot(g);
    auditBefore = await ctx.stores.sql<{ seq: number; hash: string }[]>`select seq, hash from audit_log where tenant_id = ${a.tenantId} order by seq`;
    result = await ctx.app.services.retention.sweep(new Date(now));
  });

  it('had something of every kind to remove, and beside it (the test data is complete)', () => {
    expect(Object.entries(before.expired!).filter(([, n]) => n === 0).map(([table]) => table)).toEqual([]);
    const core = ['spans', 'traces', 'trace_tokens', 'span_vectors', 'span_vectors_hnsw_4', 'trace_metrics_1m', 'trace_registry', 'evaluations', 'feedback'];
    for (const g of ['recent', 'keptOld', 'keptRecent', 'otherOld', 'otherRecent'] as const) {
      expect(core.filter((table) => !(before[g]![table]! > 0)), g).toEqual([]);
    }
    for (const g of ['recent', 'keptOld', 'otherOld'] as const) {
      expect(['webhook_events', 'webhook_deliveries', 'anomalies', 'ingest_stats', 'eval_candidates', 'failure_candidates'].filter((table) => !(before[g]![table]! > 0)), g).toEqual([]);
    }
    expect(before.keptOld!.failure_cluster_traces).toBeGreaterThan(0);
  });

  it("removes the retention project's expired traces and everything derived from them, in both stores", async () => {
    const after = await snapshot(groups.expired);
    expect(after).toEqual(Object.fromEntries(Object.keys(after).map((table) => [table, 0])));
  });

  it('leaves recent traces, the project without retention and the other tenant untouched', async () => {
    for (const name of ['recent', 'keptOld', 'keptRecent', 'otherOld', 'otherRecent'] as const) {
      expect(await snapshot(groups[name]), name).toEqual(before[name]);
    }
    // Traces the API still serves; the expired ones are gone from it too.
    const read = (id: string) => ctx.app.inject({ method: 'GET', url: `/v1/traces/${id}`, headers: a.auth });
    expect((await read(groups.recent.traceIds[0]!)).statusCode).toBe(200);
    expect((await read(groups.keptOld.traceIds[0]!)).statusCode).toBe(200);
    expect((await read(groups.expired.traceIds[0]!)).statusCode).toBe(404);
  });

  it('drops a month whose every project is expired, and deletes where a project without retention shares the month', async () => {
    const ancientMonth = monthOf(now - 120 * DAY_MS);
    const oldMonth = monthOf(now - 40 * DAY_MS);
    expect(monthlyPartitionEnd(ancientMonth)!).toBeLessThanOrEqual(cutoffMs);
    const drops = result.dropped.map((d) => `${d.table}:${d.partition}`).sort();
    expect(drops).toEqual([`spans:${ancientMonth}`, `trace_metrics_1m:${ancientMonth}`, `trace_tokens:${ancientMonth}`, `traces:${ancientMonth}`]);
    expect(result.dropped.every((d) => d.complete && d.parts > 0)).toBe(true);
    const partitions = async (table: string) =>
      (await ch<{ p: string }>('SELECT DISTINCT partition_id AS p FROM system.parts WHERE database = currentDatabase() AND table = {t:String} AND active', { t: table })).map((r) => r.p);
    for (const table of ['spans', 'traces', 'trace_tokens', 'trace_metrics_1m']) {
      expect(await partitions(table)).not.toContain(ancientMonth);
      // The month of the 40-day-old traces also holds the kept project's and tenant b's: deleted row by row, not dropped.
      expect(await partitions(table)).toContain(oldMonth);
    }

    const swept = result.projects.find((p) => p.project_id === a.projectId)!;
    expect(result.projects.map((p) => p.project_id)).toContain(a.projectId);
    expect(swept).toMatchObject({ tenant_id: a.tenantId, retention_days: 30, cutoff: new Date(cutoffMs).toISOString(), complete: true });
    expect(swept.removed).toMatchObject({
      traces: 5, trace_tokens: 5, spans: 10, span_vectors: 10, span_vectors_hnsw_4: 10, trace_registry: 5, evaluations: 5, feedback: 5,
      failure_cluster_traces: 5, webhook_events: 2, webhook_deliveries: 2, anomalies: 1, ingest_stats: 1,
    });
  });

  it('keeps dataset items, failure clusters and the audit log; records and audits the sweep', async () => {
    expect(await ctx.stores.sql`select 1 from dataset_items where id = ${datasetItem}`).toHaveLength(1);
    const clusters = await ctx.stores.sql<{ project_id: string; trace_count: number }[]>`
      select project_id, trace_count from failure_clusters where tenant_id = ${a.tenantId} and project_id = ${a.projectId}`;
    expect(clusters).toHaveLength(1);
    expect(clusters[0]!.trace_count).toBe(7); // counts are history: unchanged

    const audit = await ctx.stores.sql<{ seq: number; hash: string; action: string; details: Record<string, unknown> }[]>`
      select seq, hash, action, details from audit_log where tenant_id = ${a.tenantId} order by seq`;
    expect(audit.slice(0, auditBefore.length).map(({ seq, hash }) => ({ seq, hash }))).toEqual(auditBefore);
    const added = audit.slice(auditBefore.length);
    expect(added.map((r) => r.action)).toEqual(['retention.sweep']);
    expect(added[0]!.details).toMatchObject({ retention_days: 30, removed: { traces: 5 } });
    expect((await ctx.app.services.audit.verifyChain(a.tenantId)).valid).toBe(true);

    const status = await ctx.app.services.retention.status(a.tenantId);
    const byId = new Map(status.map((s) => [s.project_id, s]));
    expect(byId.get(a.projectId)).toMatchObject({ retention_days: 30, last_swept_at: new Date(now), last_cutoff: new Date(cutoffMs) });
    expect(byId.get(a.projectId)!.oldest_trace_at!.getTime()).toBeGreaterThanOrEqual(now - DAY_MS - 1);
    expect(byId.get(kept.id)).toMatchObject({ retention_days: null, last_swept_at: null });
    expect(byId.get(kept.id)!.oldest_trace_at!.getTime()).toBeLessThan(cutoffMs);
    expect(await ctx.app.services.retention.status(b.tenantId)).toMatchObject([{ project_id: b.projectId, retention_days: null, last_swept_at: null }]);
  });

  it('does nothing more when run again, and the metrics rollup does not bring removed minutes back', async () => {
    const expiredMinute = now - 40 * DAY_MS;
    // A later write of another project in the same minute makes the minute dirty again.
    await ingestTraces(ctx.app, a, [aTrace({ project_id: kept.id, spans: [aSpan({}, new Date(expiredMinute + 1_000))] })]);
    await ctx.app.services.metricsRollup.drain();
    const again = await ctx.app.services.retention.sweep(new Date(now + 60_000));
    expect(again.dropped).toEqual([]);
    expect(again.projects.find((p) => p.project_id === a.projectId)!.removed).toEqual({});
    expect(await snapshot(groups.expired)).toEqual(Object.fromEntries(Object.keys(before.expired!).map((table) => [table, 0])));
  });

  it('runs as the repeatable retention job', async () => {
    const sweptAt = async () =>
      (await ctx.stores.sql<{ swept_at: Date }[]>`select swept_at from retention_sweeps where project_id = ${a.projectId}`)[0]!.swept_at.getTime();
    const previous = await sweptAt();
    const workers = await startTestWorkers(ctx, ['retention']);
    try {
      await ctx.app.services.jobs.add('retention', {});
      // The sweep before ran at a made-up `now` a minute ahead; the job's runs at the clock's.
      const at = await pollUntil(sweptAt, (ms) => ms !== previous, 300, 100);
      expect(at).not.toBe(previous);
      expect(Math.abs(at - Date.now())).toBeLessThan(60_000);
    } finally {
      await workers.close();
    }
  });
});

describe('retention with nothing to do', () => {
  it('keeps the data of projects without a retention period, however old', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace({ spans: [aSpan({}, new Date(Date.now() - 400 * DAY_MS))] });
    await ingestTraces(ctx.app, t, [trace]);
    const swept = await ctx.app.services.retention.sweep();
    expect(swept.skipped).toBe(false);
    expect(swept.projects.some((p) => p.tenant_id === t.tenantId)).toBe(false);
    expect((await ctx.app.inject({ method: 'GET', url: `/v1/traces/${trace.id}`, headers: t.auth })).statusCode).toBe(200);
  });

  it('is exclusive: a sweep while another holds the lock does nothing', async () => {
    const conn = await ctx.stores.sql.reserve();
    try {
      await conn`select pg_advisory_lock(7245020)`;
      expect(await ctx.app.services.retention.sweep()).toMatchObject({ skipped: true, projects: [], dropped: [] });
      await conn`select pg_advisory_unlock(7245020)`;
      expect((await ctx.app.services.retention.sweep()).skipped).toBe(false);
    } finally {
      conn.release();
    }
  });
});

describe('partition drops (stores/clickhouse-expiry.ts, against a scripted store)', () => {
  const T = '11111111-1111-4111-8111-111111111111';
  const P = '22222222-2222-4222-8222-222222222222';
  const KEEPS = '33333333-3333-4333-8333-333333333333';

  /** A store whose partition reads answer `present`; DROP PART of a name in `merged` fails as ClickHouse does. */
  function scripted(present: { part: string; project_id: string; rows: number }[], merged: string[] = []) {
    const commands: { query: string; params: Record<string, unknown> }[] = [];
    const store = {
      cluster: undefined,
      // Expiry reads the primary, where its drops and deletes run (stores/clickhouse-expiry.ts).
      async rowsFromPrimary(name: string) {
        if (name.endsWith('.parts')) return [{ name: '202501_1_1_0', partition_id: '202501' }, { name: '202501_2_2_0', partition_id: '202501' }, { name: '202602_3_3_0', partition_id: '202602' }];
        if (name.endsWith('.partition_blocker')) return present.filter((p) => p.project_id !== P).slice(0, 1);
        if (name.endsWith('.partition_projects')) return present.map((p) => ({ ...p, tenant_id: T }));
        return [];
      },
      async command(_name: string, query: string, params: Record<string, unknown>) {
        if (merged.includes(params.part as string)) throw new Error(`No part ${String(params.part)} in committed state.`);
        commands.push({ query, params });
      },
    };
    const table = expiringTable(store as unknown as ClickHouseStore, {
      table: 'spans',
      name: 'test.expiry',
      monthly: true,
      expired: (tenantId, projectId) => TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`,
    });
    return { table, commands };
  }
  const warnings: object[] = [];
  const log = { warn: (details: object) => warnings.push(details) };
  const cutoffs = [{ tenantId: T, projectId: P, cutoffMs: Date.UTC(2026, 0, 1) }];

  it('drops only the parts it inspected, in months that end by the cutoff', async () => {
    // 202501_9_9_0 was written after the part list was read: it is judged, but not dropped unseen.
    const { table, commands } = scripted([
      { part: '202501_1_1_0', project_id: P, rows: 3 },
      { part: '202501_2_2_0', project_id: P, rows: 2 },
      { part: '202501_9_9_0', project_id: P, rows: 1 },
    ]);
    const outcome = await table.expire(cutoffs, log);
    expect(commands.map((c) => [c.query, c.params.part])).toEqual([
      ['ALTER TABLE spans  DROP PART {part:String}', '202501_1_1_0'],
      ['ALTER TABLE spans  DROP PART {part:String}', '202501_2_2_0'],
    ]);
    expect(outcome.dropped).toEqual([{ partition: '202501', parts: 2, complete: true, projects: [{ tenantId: T, projectId: P, rows: 5 }] }]);
  });

  it('drops nothing where a project without a cutoff has rows', async () => {
    const { table, commands } = scripted([
      { part: '202501_1_1_0', project_id: P, rows: 3 },
      { part: '202501_2_2_0', project_id: KEEPS, rows: 1 },
    ]);
    expect((await table.expire(cutoffs, log)).dropped).toEqual([]);
    expect(commands).toEqual([]);
  });

  it('stops at a part merged away meanwhile, and reports the parts it did drop', async () => {
    const { table, commands } = scripted(
      [
        { part: '202501_1_1_0', project_id: P, rows: 3 },
        { part: '202501_2_2_0', project_id: P, rows: 2 },
      ],
      ['202501_2_2_0'],
    );
    const outcome = await table.expire(cutoffs, log);
    expect(commands.map((c) => c.params.part)).toEqual(['202501_1_1_0']);
    expect(outcome.dropped).toEqual([{ partition: '202501', parts: 1, complete: false, projects: [{ tenantId: T, projectId: P, rows: 3 }] }]);
    expect(warnings).toHaveLength(1);
  });
});
