import { observeStoreCall } from '../../../platform/metrics.js';
import type { Sql, TxSql } from '../../../stores/pg.js';
import { combine, NO_PROJECT, type CountDelta, type ReasonCounts } from './types.js';

export interface StatsRow {
  project_id: string;
  minute: Date;
  traces_received: number;
  traces_stored: number;
  spans_received: number;
  spans_stored: number;
  refused_spans: ReasonCounts;
  refused_traces: ReasonCounts;
}

export interface StatsPageQuery {
  tenantId: string;
  fromMs: number;
  toMs: number;
  projectId?: string;
  /** Keyset: the (minute, project) of the last row of the previous page. */
  after?: { minuteMs: number; projectId: string };
  limit: number;
}

/**
 * Adds counts to their (tenant, minute, project) rows in one statement, in the caller's
 * transaction when given one. Rows are locked in key order, the same in every writer, so two
 * commits adding to the same rows never deadlock; callers run it last in their transaction, so
 * the lock on a busy minute's row is held only until the commit.
 */
export async function addCounts(sql: Sql | TxSql, deltas: readonly CountDelta[]): Promise<void> {
  const rows = combine(deltas);
  if (rows.length === 0) return;
  await observeStoreCall('postgres', 'ingest.stats_add', () => (sql as TxSql)`
    insert into ingest_stats as s
      (tenant_id, minute, project_id, traces_received, traces_stored, spans_received, spans_stored, refused_spans, refused_traces)
    select t.tenant_id, to_timestamp(t.ms / 1000.0), t.project_id, t.tr, t.ts, t.sr, t.ss, t.rs::jsonb, t.rt::jsonb
    from unnest(
      ${rows.map((r) => r.tenantId)}::uuid[], ${rows.map((r) => r.minuteMs)}::float8[], ${rows.map((r) => r.projectId ?? NO_PROJECT)}::uuid[],
      ${rows.map((r) => r.tracesReceived)}::int8[], ${rows.map((r) => r.tracesStored)}::int8[],
      ${rows.map((r) => r.spansReceived)}::int8[], ${rows.map((r) => r.spansStored)}::int8[],
      ${rows.map((r) => JSON.stringify(r.refusedSpans))}::text[], ${rows.map((r) => JSON.stringify(r.refusedTraces))}::text[]
    ) with ordinality as t(tenant_id, ms, project_id, tr, ts, sr, ss, rs, rt, n)
    order by t.n
    on conflict (tenant_id, minute, project_id) do update set
      traces_received = s.traces_received + excluded.traces_received,
      traces_stored = s.traces_stored + excluded.traces_stored,
      spans_received = s.spans_received + excluded.spans_received,
      spans_stored = s.spans_stored + excluded.spans_stored,
      refused_spans = ingest_counts_add(s.refused_spans, excluded.refused_spans),
      refused_traces = ingest_counts_add(s.refused_traces, excluded.refused_traces)`);
}

/** SQL of the ingest counts (Postgres, sql/023_ingest_stats.sql). */
export function ingestStatsRepository(sql: Sql) {
  return {
    add: (deltas: readonly CountDelta[]) => addCounts(sql, deltas),

    /** Data retention: up to `limit` of the project's rows of minutes before `cutoff`; how many went. */
    async deleteBefore(tenantId: string, projectId: string, cutoff: Date, limit: number): Promise<number> {
      const result = await sql`
        delete from ingest_stats where (tenant_id, minute, project_id) in (
          select tenant_id, minute, project_id from ingest_stats
          where tenant_id = ${tenantId} and project_id = ${projectId} and minute < ${cutoff}
          limit ${limit})`;
      return result.count;
    },

    /** Rows of the tenant in [from, to), by minute then project, `limit + 1` of them (keyset). */
    async page(q: StatsPageQuery): Promise<StatsRow[]> {
      const project = q.projectId === undefined ? sql`` : sql`and project_id = ${q.projectId}`;
      const after =
        q.after === undefined
          ? sql``
          : sql`and (minute > ${new Date(q.after.minuteMs)} or (minute = ${new Date(q.after.minuteMs)} and project_id > ${q.after.projectId}))`;
      return observeStoreCall('postgres', 'ingest.stats_page', () => sql<StatsRow[]>`
        select project_id, minute, traces_received, traces_stored, spans_received, spans_stored, refused_spans, refused_traces
        from ingest_stats
        where tenant_id = ${q.tenantId} and minute >= ${new Date(q.fromMs)} and minute < ${new Date(q.toMs)} ${project} ${after}
        order by minute, project_id
        limit ${q.limit + 1}`);
    },
  };
}

export type IngestStatsRepository = ReturnType<typeof ingestStatsRepository>;
