import { clickHouseToIso } from '../../platform/time.js';
import { spanHexOf } from '../../platform/otel-ids.js';
import type { Span, SpanSummary, Trace } from './schemas.js';

/** Columns of `traces` that a Trace response needs, in the order the spec lists the fields. */
export const TRACE_SELECT_COLUMNS = [
  'id',
  'project_id',
  'error',
  'tags',
  'tag_map',
  'started_at',
  'ended_at',
  'session_id',
  'external_id',
  'name',
  'input',
  'output',
  'model',
  'latency_ms',
  'cost',
  'total_token_count',
  'prompt_tokens_total',
  'completion_tokens_total',
  'metadata',
  'span_count',
  'failure_types',
].join(', ');

/** A `traces` row as ClickHouse returns it (JSONEachRow, 64-bit integers unquoted). */
export interface StoredTrace {
  id: string;
  project_id: string;
  error: string | null;
  tags: string[];
  tag_map: Record<string, string>;
  started_at: string;
  ended_at: string;
  session_id: string;
  external_id: string;
  name: string;
  input: string;
  output: string;
  model: string;
  latency_ms: number;
  cost: number;
  total_token_count: number;
  prompt_tokens_total: number;
  completion_tokens_total: number;
  metadata: string;
  span_count: number;
  failure_types: string[];
}

const SPAN_COLUMNS = [
  'span_id',
  'created_at',
  'tenant_id',
  'trace_id',
  'name',
  'type',
  'parent_span_id',
  'input',
  'output',
  'model',
  'latency_ms',
  'cost',
  'error',
  'prompt_tokens',
  'completion_tokens',
  'metadata',
  'start_time',
  'end_time',
  'otel_trace_id',
  'otel_span_id',
  'failure_type',
];

export const SPAN_SELECT_COLUMNS = SPAN_COLUMNS.join(', ');

/**
 * A span tree's columns: the Span columns without input, output and metadata, which are most of
 * a trace's bytes, and instead the lengths of input and output.
 */
export const SPAN_SUMMARY_SELECT_COLUMNS = [
  ...SPAN_COLUMNS.filter((c) => c !== 'input' && c !== 'output' && c !== 'metadata'),
  'lengthUTF8(input) AS input_chars',
  'lengthUTF8(output) AS output_chars',
].join(', ');

export interface StoredSpan {
  span_id: string;
  created_at: string;
  tenant_id: string;
  trace_id: string;
  name: string;
  type: string;
  parent_span_id: string | null;
  input: string;
  output: string;
  model: string;
  latency_ms: number;
  cost: number;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  metadata: string;
  start_time: string;
  end_time: string;
  otel_trace_id: string;
  otel_span_id: string;
  /** '' when none. */
  failure_type: string;
}

export type StoredSpanSummary = Omit<StoredSpan, 'input' | 'output' | 'metadata'> & { input_chars: number; output_chars: number };


/** metadata is stored as JSON text of an object; anything else reads as an empty object. */
export function metadataObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

// Ingest never stores an empty error, but the OTLP path may carry one; empty means none.
const errorOrNull = (error: string | null): string | null => (error ? error : null);

export function toTrace(row: StoredTrace): Trace {
  return {
    id: row.id,
    project_id: row.project_id,
    error: errorOrNull(row.error),
    tags: row.tags,
    tag_map: row.tag_map,
    started_at: clickHouseToIso(row.started_at),
    ended_at: clickHouseToIso(row.ended_at),
    session_id: row.session_id,
    external_id: row.external_id,
    name: row.name,
    input: row.input,
    output: row.output,
    model: row.model,
    latency_ms: Number(row.latency_ms),
    cost: Number(row.cost),
    total_token_count: Number(row.total_token_count),
    prompt_tokens_total: Number(row.prompt_tokens_total),
    completion_tokens_total: Number(row.completion_tokens_total),
    metadata: metadataObject(row.metadata),
    span_count: Number(row.span_count),
    failure_types: row.failure_types,
  };
}

export function toSpan(row: StoredSpan): Span {
  return {
    ...spanHead(row),
    input: row.input,
    output: row.output,
    ...spanMeasures(row),
    metadata: metadataObject(row.metadata),
    ...spanTail(row),
  };
}

export function toSpanSummary(row: StoredSpanSummary): SpanSummary {
  return { ...spanHead(row), ...spanMeasures(row), ...spanTail(row), input_chars: Number(row.input_chars), output_chars: Number(row.output_chars) };
}

// A Span's fields in the schema's order (the detail's text depends on it), around input, output and metadata.
const spanHead = (row: StoredSpanSummary | StoredSpan) => ({
  id: row.span_id,
    created_at: clickHouseToIso(row.created_at),
    tenant_id: row.tenant_id,
    trace_id: row.trace_id,
    name: row.name,
    type: row.type,
  parent_span_id: row.parent_span_id,
});

const spanMeasures = (row: StoredSpanSummary | StoredSpan) => ({
  model: row.model,
  latency_ms: Number(row.latency_ms),
  cost: Number(row.cost),
  error: errorOrNull(row.error),
  prompt_tokens: Number(row.prompt_tokens),
  completion_tokens: Number(row.completion_tokens),
});

const spanTail = (row: StoredSpanSummary | StoredSpan) => ({
  start_time: clickHouseToIso(row.start_time),
  end_time: clickHouseToIso(row.end_time),
  otel_trace_id: row.otel_trace_id,
  otel_span_id: row.otel_span_id,
  otel_parent_span_id: otelParentOf(row),
  failure_type: row.failure_type || null,
});

/**
 * The parent's OTel span id, from its UUID: an OTLP span's parent link was made by the same rule
 * as every OTLP span UUID (platform/otel-ids.ts), whose last 16 hex digits are the OTel span id.
 * Native spans (no OTel id of their own) and roots have none.
 */
function otelParentOf(row: Pick<StoredSpan, 'otel_span_id' | 'parent_span_id'>): string | null {
  return row.otel_span_id && row.parent_span_id ? spanHexOf(row.parent_span_id) : null;
}
