import type { ClickHouseStore } from '../../src/stores/clickhouse.js';

/** A span row as stored, times as exact nanosecond strings. */
export interface StoredSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  project_id: string;
  name: string;
  type: string;
  input: string;
  output: string;
  model: string;
  start_ns: string;
  end_ns: string;
  latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  error: string | null;
  failure_type: string;
  status_code: number;
  metadata: string;
  otel_trace_id: string;
  otel_span_id: string;
}

/** The latest version of a tenant's stored spans (of one trace when `traceId` is given), by start time. */
export function storedSpans(ch: ClickHouseStore, tenantId: string, traceId?: string): Promise<StoredSpan[]> {
  return ch.rows<StoredSpan>(
    'test.stored_spans',
    `SELECT trace_id, span_id, parent_span_id, project_id, name, type, input, output, model,
            toString(toUnixTimestamp64Nano(start_time)) AS start_ns, toString(toUnixTimestamp64Nano(end_time)) AS end_ns,
            latency_ms, prompt_tokens, completion_tokens, cost, error, failure_type, status_code, metadata,
            otel_trace_id, otel_span_id
     FROM spans FINAL
     WHERE tenant_id = {t:UUID} AND ({id:Nullable(UUID)} IS NULL OR trace_id = {id:Nullable(UUID)})
     ORDER BY start_time, name`,
    { t: tenantId, id: traceId ?? null },
  );
}
