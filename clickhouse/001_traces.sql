-- Spans: one row per span. ReplacingMergeTree(version) collapses OTLP re-sends of the same span.
-- Sorting key starts with tenant and project; trace_id next so a trace's spans are one range.
CREATE TABLE IF NOT EXISTS spans {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  trace_id UUID,
  span_id UUID,
  parent_span_id Nullable(UUID),
  name String,
  type LowCardinality(String),
  input String CODEC(ZSTD(3)),
  output String CODEC(ZSTD(3)),
  model LowCardinality(String),
  start_time DateTime64(9, 'UTC'),
  end_time DateTime64(9, 'UTC'),
  latency_ms UInt64,
  prompt_tokens UInt64,
  completion_tokens UInt64,
  cost Float64,
  error Nullable(String) CODEC(ZSTD(3)),
  failure_type LowCardinality(String),
  status_code UInt16,
  metadata String CODEC(ZSTD(3)),
  otel_trace_id String,
  otel_span_id String,
  embedding Array(Float32) CODEC(ZSTD(1)),
  created_at DateTime64(3, 'UTC'),
  version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(start_time)
ORDER BY (tenant_id, project_id, trace_id, span_id);

-- Traces: one row per trace, derived from its spans. Lists read this table only.
-- tag_pairs holds 'key=value' strings from `key:value` tags and tag_map, for the bloom filter.
CREATE TABLE IF NOT EXISTS traces {on_cluster} (
  tenant_id UUID,
  project_id UUID,
  id UUID,
  started_at DateTime64(3, 'UTC'),
  ended_at DateTime64(3, 'UTC'),
  name String,
  input String CODEC(ZSTD(3)),
  output String CODEC(ZSTD(3)),
  session_id String,
  external_id String,
  model LowCardinality(String),
  tags Array(String),
  tag_map Map(String, String),
  tag_pairs Array(String),
  metadata String CODEC(ZSTD(3)),
  error Nullable(String) CODEC(ZSTD(3)),
  failure_types Array(LowCardinality(String)),
  latency_ms UInt64,
  cost Float64,
  prompt_tokens_total UInt64,
  completion_tokens_total UInt64,
  total_token_count UInt64,
  span_count UInt32,
  version UInt64,
  INDEX idx_id id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX idx_tag_pairs tag_pairs TYPE bloom_filter(0.01) GRANULARITY 2,
  INDEX idx_session session_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX idx_failure failure_types TYPE set(8) GRANULARITY 2,
  INDEX idx_latency latency_ms TYPE minmax GRANULARITY 2,
  INDEX idx_tokens total_token_count TYPE minmax GRANULARITY 2,
  INDEX idx_model model TYPE set(64) GRANULARITY 2
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(started_at)
ORDER BY (tenant_id, project_id, started_at, id);
