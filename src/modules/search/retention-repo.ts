import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { expiringTable, type ExpiringTable, type TenantCondition } from '../../stores/clickhouse-expiry.js';
import { bind, TenantWhere } from '../../stores/clickhouse-where.js';
import { millisToClickHouse } from '../../platform/time.js';
import { hnswTable } from './index-repo.js';

const DATETIME = "DateTime64(3, 'UTC')";
const HNSW_NAME = /^span_vectors_hnsw_(\d+)$/;

/**
 * A project's vectors that expire at the cutoff: those of spans that started before it (a vector
 * goes with its span, whenever it was stored), and those stored before it (created_at, the
 * partition column of span_vectors: a span stored before the cutoff started before it, unless its
 * client sent a start in the future).
 */
function expiredVectors(tenantId: string, projectId: string, cutoffMs: number): TenantCondition {
  const cutoff = bind(DATETIME, millisToClickHouse(cutoffMs));
  const spans = TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`.and`start_time < ${cutoff}`;
  const vectors = spans.sibling().and`project_id = ${bind('UUID', projectId)}`;
  const stored = vectors.fragment`created_at < ${cutoff}`;
  return { sql: `${vectors.sql} AND (${stored} OR span_id IN (SELECT span_id FROM spans WHERE ${spans.sql}))`, params: vectors.params };
}

/** Retention of semantic search's vectors (clickhouse/004_span_vectors.sql and the HNSW tables of index-repo.ts). */
export function searchRetentionRepository(ch: ClickHouseStore) {
  return {
    vectors: expiringTable(ch, { table: 'span_vectors', name: 'search.retention_vectors', monthly: true, expired: expiredVectors }),

    /** One per HNSW table that exists on the primary (one per dimension); partitioned by project, so never dropped by month. */
    async hnsw(): Promise<ExpiringTable[]> {
      const tables = await ch.rowsFromPrimary<{ name: string }>(
        'search.retention_hnsw_tables',
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'span_vectors_hnsw_') ORDER BY name",
      );
      return tables.flatMap(({ name }) => {
        const dim = HNSW_NAME.exec(name)?.[1];
        // The name is rebuilt from code (hnswTable), never taken from the catalogue as is.
        return dim ? [expiringTable(ch, { table: hnswTable(Number(dim)), name: 'search.retention_hnsw', monthly: false, expired: expiredVectors })] : [];
      });
    },
  };
}

export type SearchRetentionRepository = ReturnType<typeof searchRetentionRepository>;
