import type { Sql, TxSql } from '../../stores/pg.js';
import type { ListClustersQuery } from './schemas.js';

export interface ClusterRow {
  id: string;
  tenant_id: string;
  project_id: string;
  type: string;
  signature: string;
  sample_error: string | null;
  first_seen: Date;
  last_seen: Date;
  count: number;
  trace_count: number;
  example_trace_ids: string[];
  last_notified_at: Date | null;
  created_at: Date;
}

export interface NewCluster {
  id: string;
  project_id: string;
  type: string;
  signature: string;
  sample_error: string | null;
  first_seen: Date;
  last_seen: Date;
}

/** What one batch adds to a locked cluster. */
export interface ClusterGrowth {
  /** Traces whose matching-span count grew, with their new count. */
  traces: { id: string; spans: number }[];
  addedSpans: number;
  /** Traces the cluster did not hold before, in occurrence order (example_trace_ids keeps the first five). */
  newTraceIds: string[];
  firstSeen: Date;
  lastSeen: Date;
  notify: boolean;
}

const MAX_EXAMPLES = 5;

export function clusterRepository(sql: Sql) {
  return {
    /** The cluster of this signature, locked for the transaction; created (empty) when new. */
    async lockOrCreate(tx: TxSql, tenantId: string, fresh: NewCluster): Promise<{ row: ClusterRow; created: boolean }> {
      const [created] = await tx<ClusterRow[]>`
        insert into failure_clusters ${tx({ ...fresh, tenant_id: tenantId })}
        on conflict (tenant_id, project_id, signature) do nothing returning *`;
      if (created) return { row: created, created: true };
      const [row] = await tx<ClusterRow[]>`
        select * from failure_clusters
        where tenant_id = ${tenantId} and project_id = ${fresh.project_id} and signature = ${fresh.signature} for update`;
      return { row: row!, created: false };
    },

    /** Matching spans already counted per trace of the cluster. */
    async counted(tx: TxSql, clusterId: string, traceIds: readonly string[]): Promise<Map<string, number>> {
      const rows = await tx<{ trace_id: string; spans: number }[]>`
        select trace_id, spans from failure_cluster_traces where cluster_id = ${clusterId} and trace_id = any(${traceIds as string[]}::uuid[])`;
      return new Map(rows.map((r) => [r.trace_id, r.spans]));
    },

    async grow(tx: TxSql, tenantId: string, clusterId: string, growth: ClusterGrowth): Promise<ClusterRow> {
      await tx`
        insert into failure_cluster_traces (tenant_id, cluster_id, trace_id, spans)
        select ${tenantId}, ${clusterId}, t.trace_id, t.spans
        from unnest(${growth.traces.map((t) => t.id)}::uuid[], ${growth.traces.map((t) => t.spans)}::int[]) as t(trace_id, spans)
        on conflict (cluster_id, trace_id) do update set spans = excluded.spans`;
      const [row] = await tx<ClusterRow[]>`
        update failure_clusters set
          count = count + ${growth.addedSpans},
          trace_count = trace_count + ${growth.newTraceIds.length},
          first_seen = least(first_seen, ${growth.firstSeen}),
          last_seen = greatest(last_seen, ${growth.lastSeen}),
          example_trace_ids = (example_trace_ids || ${growth.newTraceIds}::uuid[])[1:${MAX_EXAMPLES}],
          last_notified_at = case when ${growth.notify} then date_trunc('milliseconds', now()) else last_notified_at end,
          updated_at = now()
        where id = ${clusterId} returning *`;
      return row!;
    },

    async find(tenantId: string, id: string): Promise<ClusterRow | undefined> {
      const [row] = await sql<ClusterRow[]>`select * from failure_clusters where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    /** Newest last_seen first (then id), keyset-paginated. */
    async list(tenantId: string, q: ListClustersQuery, after: { lastSeen: Date; id: string } | null): Promise<ClusterRow[]> {
      return sql<ClusterRow[]>`
        select * from failure_clusters
        where tenant_id = ${tenantId}
          ${q.project_id ? sql`and project_id = ${q.project_id}` : sql``}
          ${q.type ? sql`and type = ${q.type}` : sql``}
          ${q.from ? sql`and last_seen >= ${q.from}::timestamptz` : sql``}
          ${q.to ? sql`and last_seen <= ${q.to}::timestamptz` : sql``}
          ${q.trace_id ? sql`and id in (select cluster_id from failure_cluster_traces where tenant_id = ${tenantId} and trace_id = ${q.trace_id})` : sql``}
          ${after ? sql`and (last_seen, id) < (${after.lastSeen}, ${after.id})` : sql``}
        order by last_seen desc, id desc
        limit ${q.limit + 1}`;
    },

    /**
     * These traces leave the failure_candidates outbox, their cluster memberships go and the
     * clusters stop naming them as examples. `forget` (data-subject erasure) also takes them out of
     * the counts and drops the sample error of every cluster that held one (it is the text of some
     * member's error, perhaps this one's); without it (retention) counts, first/last seen and the
     * sample stay: a cluster is the history of a failure, which outlives the traces it was seen in.
     * The clusters are locked first, in signature order like detection locks them, so the two never
     * deadlock. Returns the memberships removed.
     */
    async removeTraces(tenantId: string, traceIds: readonly string[], forget: boolean): Promise<number> {
      const ids = traceIds as string[];
      return sql.begin(async (tx) => {
        await tx`delete from failure_candidates where tenant_id = ${tenantId} and trace_id = any(${ids}::uuid[])`;
        await tx`
          select id from failure_clusters
          where tenant_id = ${tenantId}
            and (example_trace_ids && ${ids}::uuid[]
                 or id in (select cluster_id from failure_cluster_traces where tenant_id = ${tenantId} and trace_id = any(${ids}::uuid[])))
          order by signature for update`;
        const [removed] = await tx<{ n: number }[]>`
          with gone as (
            delete from failure_cluster_traces where tenant_id = ${tenantId} and trace_id = any(${ids}::uuid[])
            returning cluster_id, spans
          ), lost as (
            select cluster_id, sum(spans)::bigint as spans, count(*)::bigint as traces from gone group by cluster_id
          ), adjusted as (
            update failure_clusters c set
              count = greatest(0, c.count - l.spans), trace_count = greatest(0, c.trace_count - l.traces),
              sample_error = null, updated_at = now()
            from lost l where c.id = l.cluster_id and ${forget}
          )
          select coalesce(sum(traces), 0)::int as n from lost`;
        await tx`
          update failure_clusters set
            example_trace_ids = array(select x from unnest(example_trace_ids) with ordinality as e(x, i) where x <> all(${ids}::uuid[]) order by i),
            sample_error = case when ${forget} then null else sample_error end, updated_at = now()
          where tenant_id = ${tenantId} and example_trace_ids && ${ids}::uuid[]`;
        return removed!.n;
      });
    },

    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },
  };
}

export type ClusterRepository = ReturnType<typeof clusterRepository>;
