import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import { renderClickHouseDdl } from '../../stores/migrate.js';
import { millisToClickHouse } from '../../platform/time.js';

const DATETIME = "DateTime64(3, 'UTC')";

/** The first release in which the vector similarity index is generally available (earlier: experimental). */
const HNSW_MIN_VERSION = [25, 8];

/** The HNSW table of one dimension: an index is built for exactly one array length. */
export const hnswTable = (dim: number): string => {
  if (!Number.isInteger(dim) || dim < 1 || dim > 4096) throw new RangeError(`not a vector dimension: ${dim}`);
  return `span_vectors_hnsw_${dim}`;
};

/**
 * Partitioned by project: ClickHouse uses a vector index only when a query's other filters prune
 * whole partitions (a filter on the sorting key makes it fall back to a scan, a filter on other
 * columns drops rows after the index chose them, leaving fewer than LIMIT), so each project's
 * parts hold its own vectors and their own graph. HNSW with cosine distance and the engine's
 * defaults (bf16 vectors, 32 neighbours per node, 128 candidates while building).
 */
const hnswDdl = (dim: number) => `CREATE TABLE IF NOT EXISTS ${hnswTable(dim)} {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  span_id UUID,
  trace_id UUID,
  span_name String,
  span_type LowCardinality(String),
  created_at DateTime64(3, 'UTC'),
  vector Array(Float32),
  INDEX idx_vector vector TYPE vector_similarity('hnsw', 'cosineDistance', ${dim}) GRANULARITY 100000000
) ENGINE = MergeTree()
PARTITION BY (tenant_id, project_id)
ORDER BY span_id`;

const toDate = (clickHouse: string): Date => new Date(`${clickHouse.replace(' ', 'T')}Z`);

/**
 * Statements of the background HNSW loader (indexer.ts); nothing here runs on a request. Its reads
 * go to the primary, where its DDL and loads run: the version decides the DDL, and a watermark
 * advanced past vectors that a lagging replica did not show yet would leave them out for good.
 */
export function searchIndexRepository(ch: ClickHouseStore) {
  const window = (tenantId: string, projectId: string, dim: number, after: Date) =>
    TenantWhere.forTenant(tenantId)
      .and`project_id = ${bind('UUID', projectId)}`
      .and`dim = ${bind('UInt16', dim)}`
      .and`inserted_at > ${bind(DATETIME, millisToClickHouse(after.getTime()))}`;

  return {
    /** Whether the engine has the vector similarity index (GA since 25.8); exact search serves every project otherwise. */
    async supportsHnsw(): Promise<boolean> {
      const [row] = await ch.rowsFromPrimary<{ version: string }>('search.version', 'SELECT version() AS version');
      const [major = 0, minor = 0] = (row?.version ?? '').split('.').map(Number);
      return major > HNSW_MIN_VERSION[0]! || (major === HNSW_MIN_VERSION[0] && minor >= HNSW_MIN_VERSION[1]!);
    },

    async ensureTable(dim: number): Promise<void> {
      await ch.command('search.hnsw_table', renderClickHouseDdl(hnswDdl(dim), ch.cluster));
    },

    /**
     * Vectors stored after `after` and at least `lagSeconds` ago (by then every insert that took
     * its inserted_at earlier has committed), and that upper bound, the next watermark.
     */
    async pending(tenantId: string, projectId: string, dim: number, after: Date, lagSeconds: number): Promise<{ count: number; upper: Date }> {
      const where = window(tenantId, projectId, dim, after);
      const lag = where.fragment`${bind('UInt32', lagSeconds)}`;
      const [row] = await ch.rowsFromPrimary<{ count: number | string; upper: string }>(
        'search.hnsw_pending',
        `WITH now64(3, 'UTC') - toIntervalSecond(${lag}) AS watermark
         SELECT count() AS count, toString(watermark) AS upper FROM span_vectors WHERE ${where.sql} AND inserted_at <= watermark`,
        where.params,
        queryTag('search.hnsw_pending', tenantId),
      );
      return { count: Number(row?.count ?? 0), upper: toDate(row!.upper) };
    },

    /**
     * Copies the window (after, upper] into the HNSW table, inside the engine; the INSERT builds
     * the graph of the parts it writes (explicitly on: a session default must not turn it off).
     */
    async load(tenantId: string, projectId: string, dim: number, after: Date, upper: Date): Promise<void> {
      const where = window(tenantId, projectId, dim, after).and`inserted_at <= ${bind(DATETIME, millisToClickHouse(upper.getTime()))}`;
      await ch.command(
        'search.hnsw_load',
        `INSERT INTO ${hnswTable(dim)} SETTINGS materialize_skip_indexes_on_insert = 1
         SELECT tenant_id, project_id, span_id, trace_id, span_name, span_type, created_at, vector
         FROM span_vectors WHERE ${where.sql} LIMIT 1 BY span_id`,
        where.params,
      );
    },
  };
}

export type SearchIndexRepository = ReturnType<typeof searchIndexRepository>;
