import type { ClickHouseStore } from '../../../stores/clickhouse.js';
import type { SpanRow, TraceRow } from '../rows.js';
import { writeTraceRows } from '../writer.js';

/** Span columns as read back for OTLP: times as nanosecond strings, 64-bit counts possibly as strings. */
type ReadSpan = Omit<SpanRow, 'start_time' | 'end_time' | 'prompt_tokens' | 'completion_tokens' | 'status_code'> & {
  start_ns: string;
  end_ns: string;
  prompt_tokens: number | string;
  completion_tokens: number | string;
  status_code: number | string;
};

/** What the rollup needs of each span of a trace (no input/output: only the root's are read). */
export type RollupSpanRow = Pick<
  ReadSpan,
  'span_id' | 'parent_span_id' | 'name' | 'type' | 'model' | 'start_ns' | 'end_ns' | 'prompt_tokens' | 'completion_tokens' | 'cost' | 'error' | 'failure_type'
> & { session: string[]; tags: string[][]; tag_map: Record<string, string> };

export type ExportSpanRow = Omit<ReadSpan, 'tenant_id' | 'latency_ms' | 'embedding' | 'created_at' | 'version'>;

export interface ExportFilter {
  projectId: string | undefined;
  /** Inclusive bounds on span start_time, ClickHouse DateTime64 literals. */
  from: string;
  to: string;
  /** Keyset position: the last (project, trace, span) of the previous page. */
  after: { projectId: string; traceId: string; spanId: string } | undefined;
  limit: number;
}

const SESSION_KEYS = "[JSONExtractString(metadata, 'session.id'), JSONExtractString(metadata, 'gen_ai.conversation.id'), JSONExtractString(metadata, 'traceloop.association.properties.session_id')]";
const TAG_KEYS = "[JSONExtract(metadata, 'tag.tags', 'Array(String)'), JSONExtract(metadata, 'looptrace.tags', 'Array(String)')]";

export function otlpRepository(ch: ClickHouseStore) {
  return {
    /** Every span of one trace, as the rollup summarises them (latest version of each). */
    async traceSpans(tenantId: string, projectId: string, traceId: string): Promise<RollupSpanRow[]> {
      return ch.rows<RollupSpanRow>(
        'otlp.rollup.spans',
        `SELECT span_id, parent_span_id, name, type, model,
                toString(toUnixTimestamp64Nano(start_time)) AS start_ns, toString(toUnixTimestamp64Nano(end_time)) AS end_ns,
                prompt_tokens, completion_tokens, cost, error, failure_type,
                ${SESSION_KEYS} AS session, ${TAG_KEYS} AS tags,
                JSONExtract(metadata, 'looptrace.tag_map', 'Map(String, String)') AS tag_map
         FROM spans FINAL
         WHERE tenant_id = {tenant:UUID} AND project_id = {project:UUID} AND trace_id = {trace:UUID}`,
        { tenant: tenantId, project: projectId, trace: traceId },
      );
    },

    /** Input, output and resource of the span that names the trace. */
    async rootDetail(tenantId: string, projectId: string, traceId: string, spanId: string) {
      const [row] = await ch.rows<{ input: string; output: string; resource: string }>(
        'otlp.rollup.root',
        `SELECT input, output, JSONExtractRaw(metadata, 'otel.resource') AS resource
         FROM spans FINAL
         WHERE tenant_id = {tenant:UUID} AND project_id = {project:UUID} AND trace_id = {trace:UUID} AND span_id = {span:UUID}
         LIMIT 1`,
        { tenant: tenantId, project: projectId, trace: traceId, span: spanId },
      );
      return row;
    },

    /** The stored versions of a trace row: one per distinct started_at (normally one). */
    async traceVersions(tenantId: string, projectId: string, traceId: string) {
      const rows = await ch.rows<{ started_at: string; version: number | string }>(
        'otlp.rollup.versions',
        `SELECT started_at, max(version) AS version FROM traces
         WHERE tenant_id = {tenant:UUID} AND project_id = {project:UUID} AND id = {trace:UUID}
         GROUP BY started_at`,
        { tenant: tenantId, project: projectId, trace: traceId },
      );
      return rows.map((r) => ({ startedAt: r.started_at, version: Number(r.version) }));
    },

    /**
     * Lightweight delete of every stored row of a trace. Needed when its started_at (part of the
     * sorting key) moved: ReplacingMergeTree only collapses rows with equal sorting keys.
     */
    async deleteTrace(tenantId: string, projectId: string, traceId: string): Promise<void> {
      await ch.command(
        'otlp.rollup.delete',
        'DELETE FROM traces WHERE tenant_id = {tenant:UUID} AND project_id = {project:UUID} AND id = {trace:UUID}',
        { tenant: tenantId, project: projectId, trace: traceId },
      );
    },

    async insertTrace(row: TraceRow): Promise<void> {
      await writeTraceRows(ch, [row]);
    },

    /** One export page in (project, trace, span) order, the spans table's own order. */
    async exportSpans(tenantId: string, filter: ExportFilter): Promise<ExportSpanRow[]> {
      const conditions = ['tenant_id = {tenant:UUID}', "start_time >= {from:DateTime64(9, 'UTC')}", "start_time <= {to:DateTime64(9, 'UTC')}"];
      const params: Record<string, unknown> = { tenant: tenantId, from: filter.from, to: filter.to, limit: filter.limit };
      if (filter.projectId) {
        conditions.push('project_id = {project:UUID}');
        params.project = filter.projectId;
      }
      if (filter.after) {
        conditions.push(
          `(project_id > {ap:UUID} OR (project_id = {ap:UUID} AND (trace_id > {at:UUID} OR (trace_id = {at:UUID} AND span_id > {as:UUID}))))`,
        );
        Object.assign(params, { ap: filter.after.projectId, at: filter.after.traceId, as: filter.after.spanId });
      }
      return ch.rows<ExportSpanRow>(
        'otlp.export.spans',
        `SELECT project_id, trace_id, span_id, parent_span_id, name, type, input, output, model,
                toString(toUnixTimestamp64Nano(start_time)) AS start_ns, toString(toUnixTimestamp64Nano(end_time)) AS end_ns,
                prompt_tokens, completion_tokens, cost, error, failure_type, status_code, metadata, otel_trace_id, otel_span_id
         FROM spans FINAL
         WHERE ${conditions.join(' AND ')}
         ORDER BY project_id, trace_id, span_id
         LIMIT {limit:UInt32}`,
        params,
      );
    },

    /** Trace-level fields that export carries on root spans (session, tags). */
    async traceHints(tenantId: string, traceIds: readonly string[]) {
      if (traceIds.length === 0) return [];
      return ch.rows<{ id: string; session_id: string; tags: string[]; tag_map: Record<string, string> }>(
        'otlp.export.traces',
        `SELECT id, session_id, tags, tag_map FROM traces FINAL
         WHERE tenant_id = {tenant:UUID} AND id IN {ids:Array(UUID)}`,
        { tenant: tenantId, ids: traceIds },
      );
    },
  };
}

export type OtlpRepository = ReturnType<typeof otlpRepository>;
