import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import { hnswTable } from './index-repo.js';

/** A trace whose vectors go, and the project they are stored under. */
export interface VectorTraceRef {
  trace_id: string;
  project_id: string;
}

const HNSW_NAME = /^span_vectors_hnsw_(\d+)$/;

/**
 * Vectors of given traces, for data-subject requests: span_vectors and every HNSW copy
 * (span_vectors_hnsw_<dim>). The HNSW tables are plain MergeTree tables whose vector index is
 * built per part, so a lightweight delete removes single rows from them like from any other table
 * (the graph of a part is rebuilt when the part is rewritten). Reads go to the primary, like those
 * of the traces' erasure (traces/subject-repo.ts).
 */
export function vectorErasureRepository(ch: ClickHouseStore) {
  const byRefs = (tenantId: string, refs: readonly VectorTraceRef[]) =>
    TenantWhere.forTenant(tenantId)
      .and`project_id IN ${bind('Array(UUID)', [...new Set(refs.map((r) => r.project_id))])}`
      .and`trace_id IN ${bind('Array(UUID)', refs.map((r) => r.trace_id))}`;

  /** The HNSW tables that exist (created by the indexer job, one per dimension). */
  const hnswTables = async (): Promise<string[]> => {
    const rows = await ch.rowsFromPrimary<{ name: string }>(
      'privacy.hnsw_tables',
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'span_vectors_hnsw_')",
    );
    // Table names are rebuilt from their dimension: nothing read from the engine reaches the SQL text as is.
    return rows.map((r) => HNSW_NAME.exec(r.name)).filter((m) => m !== null).map((m) => hnswTable(Number(m[1])));
  };

  return {
    /** Vectors stored of these traces' spans (one per span; markers of refused texts are not vectors). */
    async count(tenantId: string, refs: readonly VectorTraceRef[]): Promise<number> {
      if (refs.length === 0) return 0;
      const where = byRefs(tenantId, refs).and`dim > 0`;
      const [row] = await ch.rowsFromPrimary<{ n: number | string }>(
        'privacy.count_vectors',
        `SELECT uniqExact(span_id) AS n FROM span_vectors WHERE ${where.sql}`,
        where.params,
        queryTag('privacy.count_vectors', tenantId),
      );
      return Number(row?.n ?? 0);
    },

    /** Lightweight deletes from span_vectors and every HNSW table, waited for. */
    async erase(tenantId: string, refs: readonly VectorTraceRef[]): Promise<void> {
      if (refs.length === 0) return;
      for (const table of ['span_vectors', ...(await hnswTables())]) {
        const where = byRefs(tenantId, refs);
        await ch.command('privacy.erase_vectors', `DELETE FROM ${table} WHERE ${where.sql} SETTINGS lightweight_deletes_sync = 2`, where.params);
      }
    },

    /** Rows of these traces left in span_vectors and the HNSW tables. */
    async remaining(tenantId: string, refs: readonly VectorTraceRef[]): Promise<number> {
      if (refs.length === 0) return 0;
      let total = 0;
      for (const table of ['span_vectors', ...(await hnswTables())]) {
        const where = byRefs(tenantId, refs);
        const [row] = await ch.rowsFromPrimary<{ n: number | string }>('privacy.remaining_vectors', `SELECT count() AS n FROM ${table} WHERE ${where.sql}`, where.params);
        total += Number(row?.n ?? 0);
      }
      return total;
    },

    /** Removes lightweight-deleted rows from disk now rather than at the next merge. */
    async purge(): Promise<void> {
      for (const table of ['span_vectors', ...(await hnswTables())]) {
        await ch.command('privacy.purge_vectors', `ALTER TABLE ${table} APPLY DELETED MASK SETTINGS mutations_sync = 2`);
      }
    },
  };
}

export type VectorErasureRepository = ReturnType<typeof vectorErasureRepository>;
