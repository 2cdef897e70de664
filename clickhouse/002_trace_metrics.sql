-- Per-minute trace metrics, one row per (tenant, project, minute, model, name), feeding GET /v1/metrics.
--
-- Not a materialized view on `traces`: a trace row is rewritten (OTLP rollup versions, a moved
-- started_at), and an insert-triggered view would count every version. Instead the metrics rollup
-- job recomputes whole (tenant, minute) slices from `traces FINAL` with INSERT … SELECT; every row
-- of one recomputation carries the same `version` (the server's now64 in ns at query start), and
-- each slice always gets a marker row (nil project, zero counts), so readers keep only the rows of
-- the newest recomputation of each minute (`(minute, version) IN (… max(version) …)`): an older
-- recomputation that lands late, or a group that vanished, never counts. Groups that vanished are
-- also written as zero rows, so a plain `FINAL` read is right too when recomputations do not race.
--
-- latency_ms is a mergeable DDSketch (1% relative accuracy) of trace latencies in ms, levels
-- p50, p95, p99; merge with quantilesDDMerge(0.01, 0.5, 0.95, 0.99) at query time.
CREATE TABLE IF NOT EXISTS trace_metrics_1m {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  minute DateTime('UTC'),
  model LowCardinality(String),
  name String,
  trace_count UInt64,
  error_count UInt64,
  prompt_tokens UInt64,
  completion_tokens UInt64,
  cost Float64,
  latency_ms_sum UInt64,
  latency_ms AggregateFunction(quantilesDD(0.01, 0.5, 0.95, 0.99), UInt64),
  version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(minute)
ORDER BY (tenant_id, project_id, minute, model, name);
