import { TupleParam } from '@clickhouse/client';
import type { ClickHouseStore } from '../../../stores/clickhouse.js';
import type { SpanRow } from '../rows.js';

/** Span columns as read back for OTLP: times as nanosecond strings, 64-bit counts possibly as strings. */
type ReadSpan = Omit<SpanRow, 'start_time' | 'end_time' | 'prompt_tokens' | 'completion_tokens' | 'status_code'> & {
  start_ns: string;
  end_ns: string;
  prompt_tokens: number | string;
  completion_tokens: number | string;
  status_code: number | string;
};

/** A stored span as the trace-state fold reads it back (spans committed before the state was kept). */
export interface StoredSpanRow {
  tenant_id: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  type: string;
  model: string;
  start_ns: string;
  end_ns: string;
  prompt_tokens: number | string;
  completion_tokens: number | string;
  cost: number;
  error: string | null;
  failure_type: string;
  session: string[];
  tags: string[][];
  tag_map: Record<string, string>;
}

/** The fields of a trace row that come from its root span. */
export interface RootDetailRow {
  tenant_id: string;
  trace_id: string;
  input: string;
  output: string;
  resource: string;
}

/** Identifies a trace (or one of its spans) across tenants: the spans table's key order. */
export interface SpanKey {
  tenantId: string;
  projectId: string;
  traceId: string;
  spanId?: string;
}

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
    /**
     * Every span of these traces (one query for all, any tenants), for traces whose state was never
     * kept: written before this release, or by a group commit that died before its state was saved.
     * From the primary: the group commit folds what earlier commits wrote, which a read replica may
     * not have yet.
     */
    async storedSpans(traces: readonly SpanKey[]): Promise<StoredSpanRow[]> {
      if (traces.length === 0) return [];
      return ch.rowsFromPrimary<StoredSpanRow>(
        'otlp.state.stored_spans',
        `SELECT tenant_id, trace_id, span_id, parent_span_id, name, type, model,
                toString(toUnixTimestamp64Nano(start_time)) AS start_ns, toString(toUnixTimestamp64Nano(end_time)) AS end_ns,
                prompt_tokens, completion_tokens, cost, error, failure_type,
                ${SESSION_KEYS} AS session, ${TAG_KEYS} AS tags,
                JSONExtract(metadata, 'looptrace.tag_map', 'Map(String, String)') AS tag_map
         FROM spans FINAL
         WHERE (tenant_id, project_id, trace_id) IN {keys:Array(Tuple(UUID, UUID, UUID))}`,
        { keys: traces.map((t) => new TupleParam([t.tenantId, t.projectId, t.traceId])) },
      );
    },

    /** Input, output and resource of root spans that an earlier group commit stored (one query for all; from the primary, as storedSpans). */
    async rootDetails(roots: readonly Required<SpanKey>[]): Promise<RootDetailRow[]> {
      if (roots.length === 0) return [];
      return ch.rowsFromPrimary<RootDetailRow>(
        'otlp.state.root_details',
        `SELECT tenant_id, trace_id, input, output, JSONExtractRaw(metadata, 'otel.resource') AS resource
         FROM spans FINAL
         WHERE (tenant_id, project_id, trace_id, span_id) IN {keys:Array(Tuple(UUID, UUID, UUID, UUID))}`,
        { keys: roots.map((r) => new TupleParam([r.tenantId, r.projectId, r.traceId, r.spanId])) },
      );
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
         WHERE tenant_id = {tenant:UUID} AND id IN {ids:Array(UUID)} AND is_deleted = 0`,
        { tenant: tenantId, ids: traceIds },
      );
    },
  };
}

export type OtlpRepository = ReturnType<typeof otlpRepository>;
