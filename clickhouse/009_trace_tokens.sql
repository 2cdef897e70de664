-- Full-text search's index (GET /v1/traces?q=; docs/api-decisions.md "Full-text search"): each
-- trace's distinct tokens (joined by spaces: as one String they cost 40% less to insert than as an
-- Array(String), measured), one row per trace per commit that wrote it, at the key of the trace row
-- that commit wrote. A token is found in one row per trace instead of in every span that holds it:
-- a word in 10,000 traces of the 100M-span bench dataset is 10,000 rows here, spread over the
-- table, where the spans' own text index kept 7,933 of 21,111 granules to read (docs/benchmarks.md).
-- The rows carry the trace's place in the traces sorting key, so a search orders and pages its
-- hits without asking anyone else where they are. Ingest writes them (ingest/tokens.ts) before
-- the trace row; when an OTLP trace's start moves, its rows are copied to the new key, so the rows
-- at a trace's current key hold all its tokens. Same partitions as traces, for retention.
CREATE TABLE IF NOT EXISTS trace_tokens {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  started_at DateTime64(3, 'UTC'),
  trace_id UUID,
  tokens String CODEC(ZSTD(1)),
  version UInt64,
  INDEX idx_tokens tokens TYPE text(tokenizer = splitByNonAlpha)
) ENGINE = MergeTree
PARTITION BY toYYYYMM(started_at)
ORDER BY (tenant_id, project_id, started_at, trace_id);

-- The traces stored before this migration: the tokens of each trace row's own text, then of its
-- spans, at its key. The spans are read in their sorting key's order, so the GROUP BY streams
-- instead of holding every trace's tokens at once. Idempotent: emptied first.
TRUNCATE TABLE IF EXISTS trace_tokens {on_cluster};
INSERT INTO trace_tokens (tenant_id, project_id, started_at, trace_id, tokens, version)
SELECT tenant_id, project_id, started_at, id,
       arrayStringConcat(arrayDistinct(arrayFilter(w -> lengthUTF8(w) <= 500, splitByNonAlpha(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, '')))))), ' '),
       version
FROM traces FINAL
WHERE is_deleted = 0;
INSERT INTO trace_tokens (tenant_id, project_id, started_at, trace_id, tokens, version)
SELECT s.tenant_id, s.project_id, t.started_at, s.trace_id, s.tokens, t.version
FROM (
  SELECT tenant_id, project_id, trace_id,
         arrayStringConcat(arrayDistinct(arrayFlatten(groupArray(arrayFilter(w -> lengthUTF8(w) <= 500, splitByNonAlpha(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, '')))))))), ' ') AS tokens
  FROM spans
  GROUP BY tenant_id, project_id, trace_id
) AS s
INNER JOIN (SELECT tenant_id, id, started_at, version FROM traces FINAL WHERE is_deleted = 0) AS t
  ON s.tenant_id = t.tenant_id AND s.trace_id = t.id
SETTINGS optimize_aggregation_in_order = 1;

-- The spans' and traces' own text indexes served the search before this table; nothing reads them now.
ALTER TABLE spans {on_cluster} DROP INDEX IF EXISTS idx_text;
ALTER TABLE traces {on_cluster} DROP INDEX IF EXISTS idx_text
