/**
 * The tables a tenant's SQL reads, as CTEs named traces, spans and metrics_1m that carry the
 * tenant: the query runs as `WITH <these> SELECT * FROM (<the tenant's query>)`, so its
 * unqualified table names resolve to them, with the API's column names and its view of the data
 * (the latest version of each row, superseded trace rows left out).
 *
 * They are the naming layer, not the only wall: every table of the database is also filtered by the
 * query's additional_table_filters (tenantTableFilters), which the engine applies to each read of
 * the table wherever it appears, and guard.ts refuses every other way out (other databases, table
 * functions, settings).
 */
export function tenantViews(database: string, tenantId: string): string {
  const tenant = `tenant_id = '${tenantId}'`;
  return `WITH
  traces AS (
    SELECT id, project_id, error, tags, tag_map, started_at, ended_at, session_id, external_id, name, input, output, model,
      latency_ms, cost, total_token_count, prompt_tokens_total, completion_tokens_total, metadata, span_count, failure_types
    FROM ${database}.traces FINAL WHERE ${tenant} AND is_deleted = 0
  ),
  spans AS (
    SELECT span_id AS id, created_at, tenant_id, trace_id, project_id, name, type, parent_span_id, input, output, model,
      latency_ms, cost, error, prompt_tokens, completion_tokens, metadata, start_time, end_time, otel_trace_id, otel_span_id,
      failure_type, status_code
    FROM ${database}.spans FINAL WHERE ${tenant}
  ),
  metrics_1m AS (
    SELECT project_id, minute, model, name, trace_count, error_count, prompt_tokens, completion_tokens, cost, latency_ms_sum,
      latency_ms AS latency_ms_state
    FROM ${database}.trace_metrics_1m FINAL WHERE ${tenant}
  )`;
}

/**
 * additional_table_filters for every table of the database: the tenant's rows of a table with a
 * tenant_id column, nothing of any other. A setting map of SQL strings, quoted for a SETTINGS clause.
 */
export function tenantTableFilters(database: string, tenantId: string, tables: readonly { name: string; tenantScoped: boolean }[]): string {
  const entries = tables.map(({ name, tenantScoped }) => {
    const filter = tenantScoped ? `tenant_id = \\'${tenantId}\\'` : '0';
    return `'${database}.${name}': '${filter}'`;
  });
  return `{${entries.join(', ')}}`;
}
