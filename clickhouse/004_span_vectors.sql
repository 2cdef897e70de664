-- Span vectors for semantic search (src/modules/search, docs/api-decisions.md "Semantic span search").
--
-- Every vector of every project, any dimension, exact search only: a search reads its project's
-- range of the sorting key and orders by cosineDistance. No vector index here, so nothing on the
-- ingest path ever builds one. Projects past a size get their vectors copied by a background job
-- into span_vectors_hnsw_<dim> (one table per dimension, created by that job, partitioned by
-- project) whose HNSW index serves their searches; see search/index-repo.ts.
--
-- ReplacingMergeTree: a span re-embedded, or written twice by a retried ingest, keeps one row, and
-- searches also take one row per span_id until merges have run. inserted_at is the server's clock
-- at insert, the watermark the HNSW loader copies by. dim 0 (no vector) marks a span whose text the
-- embedding provider refused, so that the embedder does not send it again.
CREATE TABLE IF NOT EXISTS span_vectors {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  span_id UUID,
  trace_id UUID,
  span_name String,
  span_type LowCardinality(String),
  created_at DateTime64(3, 'UTC'),
  dim UInt16,
  vector Array(Float32),
  inserted_at DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
) ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(created_at)
ORDER BY (tenant_id, project_id, span_id);

-- Native ingest's `embedding` field: part of the same INSERT into spans, so a span acknowledged
-- with a vector has that vector stored (an INSERT whose view fails fails as a whole and is
-- retried). A zero vector has no direction and is left out.
CREATE MATERIALIZED VIEW IF NOT EXISTS span_vectors_mv {on_cluster} TO span_vectors AS
SELECT
  tenant_id,
  project_id,
  span_id,
  trace_id,
  name AS span_name,
  type AS span_type,
  created_at,
  toUInt16(length(embedding)) AS dim,
  embedding AS vector
FROM spans
WHERE length(embedding) > 0 AND L2Norm(embedding) > 0;

-- Vectors Looptrace writes itself (the embedder job): each as base64 of its little-endian Float32
-- bytes, turned back into the array inside the engine (reinterpret, a copy). A third of the text
-- of the same floats as JSON numbers, and measured at about ten times their insert rate, because
-- neither side formats or parses a decimal (docs/api-decisions.md). The Null engine keeps nothing:
-- its view writes span_vectors.
CREATE TABLE IF NOT EXISTS span_vectors_input {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  span_id UUID,
  trace_id UUID,
  span_name String,
  span_type LowCardinality(String),
  created_at DateTime64(3, 'UTC'),
  vector_f32le_base64 String
) ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS span_vectors_input_mv {on_cluster} TO span_vectors AS
SELECT tenant_id, project_id, span_id, trace_id, span_name, span_type, created_at, toUInt16(length(vector)) AS dim, vector
FROM (
  SELECT tenant_id, project_id, span_id, trace_id, span_name, span_type, created_at,
    reinterpret(base64Decode(vector_f32le_base64), 'Array(Float32)') AS vector
  FROM span_vectors_input
)
WHERE L2Norm(vector) > 0;
