import type { Sql, TxSql } from '../../stores/pg.js';
import type { AnomalyMetric, Severity } from './detector.js';
import type { ListAnomaliesQuery } from './schemas.js';

export interface NewAnomaly {
  id: string;
  project_id: string;
  metric: AnomalyMetric;
  window_start: Date;
  window_end: Date;
  observed: number;
  expected: number;
  score: number;
  severity: Severity;
}

export interface AnomalyRow extends NewAnomaly {
  tenant_id: string;
  created_at: Date;
}

export function anomalyRepository(sql: Sql) {
  return {
    /** Stores the anomalies not stored yet (one per project, metric and window) and returns those. */
    async insertNew(tx: TxSql, tenantId: string, anomalies: readonly NewAnomaly[]): Promise<AnomalyRow[]> {
      if (anomalies.length === 0) return [];
      return tx<AnomalyRow[]>`
        insert into anomalies ${tx(anomalies.map((a) => ({ ...a, tenant_id: tenantId })))}
        on conflict (tenant_id, project_id, metric, window_start) do nothing returning *`;
    },

    /** Newest window first (then id), keyset-paginated. */
    async list(tenantId: string, q: ListAnomaliesQuery, after: { windowStart: Date; id: string } | null): Promise<AnomalyRow[]> {
      return sql<AnomalyRow[]>`
        select * from anomalies
        where tenant_id = ${tenantId}
          ${q.project_id ? sql`and project_id = ${q.project_id}` : sql``}
          ${q.metric ? sql`and metric = ${q.metric}` : sql``}
          ${q.from ? sql`and window_start >= ${q.from}::timestamptz` : sql``}
          ${q.to ? sql`and window_start <= ${q.to}::timestamptz` : sql``}
          ${after ? sql`and (window_start, id) < (${after.windowStart}, ${after.id})` : sql``}
        order by window_start desc, id desc
        limit ${q.limit + 1} offset ${after ? 0 : (q.offset ?? 0)}`;
    },

    /** Retention: up to `limit` of the project's anomalies whose window started before `cutoff`; returns how many. */
    async deleteBefore(tenantId: string, projectId: string, cutoff: Date, limit: number): Promise<number> {
      const result = await sql`
        delete from anomalies where id in (
          select id from anomalies
          where tenant_id = ${tenantId} and project_id = ${projectId} and window_start < ${cutoff}
          limit ${limit})`;
      return result.count;
    },

    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },
  };
}

export type AnomalyRepository = ReturnType<typeof anomalyRepository>;
