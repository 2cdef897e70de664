import { PARQUET_SETTINGS } from '../../stores/clickhouse-parquet.js';
import type { ResultChunk } from '../../stores/clickhouse-stream.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind } from '../../stores/clickhouse-where.js';
import type { TraceFilter } from './filters.js';
import type { TraceKey } from './repo.js';
import type { ExportFormat } from './schemas.js';

/** The spec's export columns, in order, for CSV, JSONL and Parquet alike. */
export const EXPORT_COLUMNS = [
  'trace_id',
  'span_id',
  'name',
  'type',
  'model',
  'created_at',
  'duration_ms',
  'prompt_tokens',
  'completion_tokens',
  'cost_usd',
  'trace_input',
  'trace_output',
  'span_input',
  'span_output',
  'error',
] as const;

// CSV has no null: no error is an empty field. JSONL and Parquet keep null, as Span.error does.
const ERROR_EXPRESSION: Record<ExportFormat, string> = {
  csv: "ifNull(s.error, '')",
  jsonl: "nullIf(s.error, '')",
  parquet: "nullIf(s.error, '')",
};

// Text formats carry the API's timestamp string; Parquet keeps the column's DateTime64(3, 'UTC'),
// written as a TIMESTAMP(MILLIS, UTC) column.
const CREATED_AT_EXPRESSION: Record<ExportFormat, string> = {
  csv: "concat(replaceOne(toString(s.created_at), ' ', 'T'), 'Z')",
  jsonl: "concat(replaceOne(toString(s.created_at), ' ', 'T'), 'Z')",
  parquet: 's.created_at',
};

const FORMAT_SETTINGS: Record<ExportFormat, string> = {
  csv: 'output_format_json_quote_64bit_integers = 0, output_format_json_escape_forward_slashes = 0',
  jsonl: 'output_format_json_quote_64bit_integers = 0, output_format_json_escape_forward_slashes = 0',
  parquet: PARQUET_SETTINGS,
};

const CLICKHOUSE_FORMAT = { csv: 'CSV', jsonl: 'JSONEachRow', parquet: 'Parquet' } as const;

/**
 * Streaming export queries. ClickHouse formats the rows itself (CSV quoting, JSON escaping, Parquet
 * column chunks), and the caller pipes the chunks to the HTTP reply.
 */
export function traceExportRepository(ch: ClickHouseStore) {
  return {
    /**
     * The spans of one page of traces, one row per span: traces in `id` order as `keys` come, spans
     * by start time. Both sides read primary-key ranges: spans by (project, trace_id), traces by
     * the filter's own conditions (its time bounds prune) plus the page's ids.
     */
    streamPage(filter: TraceFilter, keys: readonly TraceKey[], format: ExportFormat, maxRows: number): AsyncIterable<ResultChunk> {
      const ids = keys.map((k) => k.id);
      const projects = [...new Set(keys.map((k) => k.project_id))];
      const traces = filter.where().and`id IN ${bind('Array(UUID)', ids)}`;
      const spans = traces
        .sibling()
        .and`project_id IN ${bind('Array(UUID)', projects)}`
        .and`trace_id IN ${bind('Array(UUID)', ids)}`;
      const limit = spans.fragment`${bind('UInt64', maxRows)}`;
      const query = `
        SELECT
          s.trace_id AS trace_id,
          s.span_id AS span_id,
          s.name AS name,
          s.type AS type,
          s.model AS model,
          ${CREATED_AT_EXPRESSION[format]} AS created_at,
          s.latency_ms AS duration_ms,
          s.prompt_tokens AS prompt_tokens,
          s.completion_tokens AS completion_tokens,
          s.cost AS cost_usd,
          t.input AS trace_input,
          t.output AS trace_output,
          s.input AS span_input,
          s.output AS span_output,
          ${ERROR_EXPRESSION[format]} AS error
        FROM (
          SELECT trace_id, span_id, name, type, model, created_at, latency_ms, prompt_tokens, completion_tokens,
                 cost, input, output, error, start_time
          FROM spans FINAL WHERE ${spans.sql}
        ) AS s
        INNER JOIN (SELECT id, input, output FROM traces FINAL WHERE ${traces.sql} AND is_deleted = 0) AS t ON t.id = s.trace_id
        ORDER BY s.trace_id, s.start_time, s.span_id
        LIMIT ${limit}
        SETTINGS ${FORMAT_SETTINGS[format]}`;
      return ch.stream(query, spans.params, CLICKHOUSE_FORMAT[format]);
    },
  };
}

export type TraceExportRepository = ReturnType<typeof traceExportRepository>;
