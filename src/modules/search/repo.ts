import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import { millisToClickHouse } from '../../platform/time.js';
import { hnswTable } from './index-repo.js';

const DATETIME = "DateTime64(3, 'UTC')";

/** One nearest span as a query returns it; `created_at` is a ClickHouse DateTime64(3) literal. */
export interface VectorHit {
  span_id: string;
  trace_id: string;
  span_name: string;
  span_type: string;
  created_at: string;
  similarity: number;
}

/** A vector to store; span_vectors takes its dimension from it and inserted_at from the server's clock. */
export interface VectorRow {
  tenant_id: string;
  project_id: string;
  span_id: string;
  trace_id: string;
  span_name: string;
  span_type: string;
  created_at: string;
  vector: readonly number[];
}

const REFUSED_COLUMNS = ['tenant_id', 'project_id', 'span_id', 'trace_id', 'span_name', 'span_type', 'created_at', 'dim', 'vector'] as const;
const INPUT_COLUMNS = ['tenant_id', 'project_id', 'span_id', 'trace_id', 'span_name', 'span_type', 'created_at', 'vector_f32le_base64'] as const;

// reinterpret(…, 'Array(Float32)') reads little-endian floats; a Float32Array has the host's byte order.
if (new Uint8Array(new Float32Array([1]).buffer)[3] !== 0x3f) throw new Error('span vectors are written as little-endian Float32: big-endian hosts are not supported');

/** The wire form of a vector (span_vectors_input): base64 of its Float32 bytes, about 5.3 characters a number. */
const float32Base64 = (vector: readonly number[]): string => {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
};

/** A span the embedder should embed: no vector of its own, some text. */
export interface SpanText {
  span_id: string;
  trace_id: string;
  name: string;
  type: string;
  created_at: string;
  input: string;
  output: string;
}

const HIT_COLUMNS = 'span_id, trace_id, span_name, span_type, created_at';

/** Named ClickHouse queries of semantic search; every WHERE starts with the tenant. */
export function searchRepository(ch: ClickHouseStore) {
  /** The project's vectors of `dim` dimensions (the rule makes that all of them; the filter keeps cosineDistance defined). */
  const projectVectors = (tenantId: string, projectId: string, dim: number) =>
    TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`.and`dim = ${bind('UInt16', dim)}`;

  /** Exact nearest `k` of `where`'s rows of span_vectors, one row per span; `query` is a bound vector placeholder. */
  const exactSql = (where: TenantWhere, query: string, k: string) =>
    `SELECT ${HIT_COLUMNS}, 1 - cosineDistance(vector, ${query}) AS similarity FROM span_vectors WHERE ${where.sql}
     ORDER BY cosineDistance(vector, ${query}) LIMIT 1 BY span_id LIMIT ${k}`;

  return {
    /** Brute force over the project's range of the sorting key: exact, and as fast as a scan of its vectors. */
    async exact(tenantId: string, projectId: string, dim: number, vector: readonly number[], k: number): Promise<VectorHit[]> {
      const where = projectVectors(tenantId, projectId, dim);
      const query = where.fragment`${bind('Array(Float32)', vector)}`;
      const limit = where.fragment`${bind('UInt32', k)}`;
      return ch.rows<VectorHit>('search.exact', exactSql(where, query, limit), where.params, queryTag('search.exact', tenantId));
    },

    /**
     * The project's HNSW partition (vectors up to `loadedUntil`), plus an exact pass over the
     * vectors stored since. The HNSW side's similarity is the index's own (bf16 vectors, within
     * about 1e-3); a span on both sides appears twice, which the caller merges.
     */
    async indexed(tenantId: string, projectId: string, dim: number, vector: readonly number[], k: number, loadedUntil: Date): Promise<VectorHit[]> {
      const hnsw = TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`;
      const query = hnsw.fragment`${bind('Array(Float32)', vector)}`;
      const limit = hnsw.fragment`${bind('UInt32', k)}`;
      // A sibling shares the parameter set, so the vector is sent once for both sides.
      const tail = hnsw.sibling()
        .and`project_id = ${bind('UUID', projectId)}`
        .and`dim = ${bind('UInt16', dim)}`
        .and`inserted_at > ${bind(DATETIME, millisToClickHouse(loadedUntil.getTime()))}`;
      // Only the partition key is filtered, so the index is used, on that project's parts alone.
      const sql = `SELECT ${HIT_COLUMNS}, 1 - cosineDistance(vector, ${query}) AS similarity FROM ${hnswTable(dim)} WHERE ${hnsw.sql}
        ORDER BY cosineDistance(vector, ${query}) LIMIT ${limit}
        UNION ALL ${exactSql(tail, query, limit)}`;
      return ch.rows<VectorHit>('search.indexed', sql, tail.params, queryTag('search.indexed', tenantId));
    },

    /** Through span_vectors_input: floats as bytes, decoded inside the engine, never as decimal text. */
    async insert(rows: readonly VectorRow[]): Promise<void> {
      await ch.insert('span_vectors_input', rows.map(({ vector, ...row }) => ({ ...row, vector_f32le_base64: float32Base64(vector) })), INPUT_COLUMNS);
    },

    /**
     * Spans whose text the embedding provider refused: rows of dimension 0 without a vector, so the
     * embedder does not send them again; no search or HNSW load reads dimension 0.
     */
    async insertRefused(spans: readonly Omit<VectorRow, 'vector'>[]): Promise<void> {
      await ch.insert('span_vectors', spans.map((s) => ({ ...s, dim: 0, vector: [] })), REFUSED_COLUMNS);
    },

    /**
     * Spans of the project stored since `since` that carry no vector of their own and have none in
     * span_vectors yet, oldest first. Truncated text: embedding models take a few thousand tokens.
     * From the primary: the embedder's watermark moves past what this returns, and a lagging
     * replica would hide spans (never embedded) and the vectors just stored (embedded twice).
     */
    async unembeddedSpans(tenantId: string, projectId: string, since: Date, limit: number, maxChars: number): Promise<SpanText[]> {
      const from = bind(DATETIME, millisToClickHouse(since.getTime()));
      const spans = TenantWhere.forTenant(tenantId)
        .and`project_id = ${bind('UUID', projectId)}`
        .and`created_at >= ${from}`
        .and`length(embedding) = 0 AND (input != '' OR output != '')`;
      const done = spans.sibling().and`project_id = ${bind('UUID', projectId)}`.and`created_at >= ${from}`;
      const chars = spans.fragment`${bind('UInt32', maxChars)}`;
      const max = spans.fragment`${bind('UInt32', limit)}`;
      return ch.rowsFromPrimary<SpanText>(
        'search.unembedded_spans',
        `SELECT span_id, trace_id, name, type, created_at, substringUTF8(input, 1, ${chars}) AS input, substringUTF8(output, 1, ${chars}) AS output
         FROM spans WHERE ${spans.sql} AND span_id NOT IN (SELECT span_id FROM span_vectors WHERE ${done.sql})
         ORDER BY created_at, span_id LIMIT 1 BY span_id LIMIT ${max}`,
        spans.params,
        queryTag('search.unembedded_spans', tenantId),
      );
    },
  };
}

export type SearchRepository = ReturnType<typeof searchRepository>;
