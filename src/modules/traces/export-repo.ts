import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import type { TraceKey } from './repo.js';
import type { ExportFormat } from './schemas.js';

/** The spec's export columns, in order, for CSV and JSONL alike. */
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

const DATETIME = "DateTime64(3, 'UTC')";

// CSV has no null: no error is an empty field. JSONL keeps null, as Span.error does.
const ERROR_EXPRESSION: Record<ExportFormat, string> = {
  csv: "ifNull(s.error, '')",
  jsonl: "nullIf(s.error, '')",
};

const CLICKHOUSE_FORMAT = { csv: 'CSV', jsonl: 'JSONEachRow' } as const;

/**
 * Streaming export queries. ClickHouse formats the rows itself (CSV quoting, JSON escaping), and
 * the caller pipes the result stream to the HTTP reply.
 */
export function traceExportRepository(ch: ClickHouseStore) {
  return {
    /**
     * The spans of one page of traces, one row per span, in the listing's order (started_at desc,
     * id desc), spans by start time. `keys` come from the listing query, so both sides read a
     * primary-key range: traces by (project, started_at span of the page), spans by (project, trace).
     */
    async openPage(tenantId: string, keys: readonly TraceKey[], format: ExportFormat, maxRows: number) {
      const ids = keys.map((k) => k.id);
      const projects = [...new Set(keys.map((k) => k.project_id))];
      const startedAt = keys.map((k) => k.started_at).sort();
      const spans = TenantWhere.forTenant(tenantId)
        .and`project_id IN ${bind('Array(UUID)', projects)}`
        .and`trace_id IN ${bind('Array(UUID)', ids)}`;
      const traces = spans
        .sibling()
        .and`project_id IN ${bind('Array(UUID)', projects)}`
        .and`started_at >= ${bind(DATETIME, startedAt[0])} AND started_at <= ${bind(DATETIME, startedAt[startedAt.length - 1])}`
        .and`id IN ${bind('Array(UUID)', ids)}`;
      const limit = spans.fragment`${bind('UInt64', maxRows)}`;
      const query = `
        SELECT
          s.trace_id AS trace_id,
          s.span_id AS span_id,
          s.name AS name,
          s.type AS type,
          s.model AS model,
          concat(replaceOne(toString(s.created_at), ' ', 'T'), 'Z') AS created_at,
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
        INNER JOIN (
          SELECT id, started_at, input, output FROM traces FINAL WHERE ${traces.sql}
        ) AS t ON t.id = s.trace_id
        ORDER BY t.started_at DESC, t.id DESC, s.start_time, s.span_id
        LIMIT ${limit}`;
      return ch.client.query({
        query,
        format: CLICKHOUSE_FORMAT[format],
        query_params: spans.params,
        clickhouse_settings: {
          ...queryTag('traces.export', tenantId),
          output_format_json_quote_64bit_integers: 0,
          output_format_json_escape_forward_slashes: 0,
        },
      });
    },
  };
}

export type TraceExportRepository = ReturnType<typeof traceExportRepository>;
