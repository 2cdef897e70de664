import { roundUsd } from '../../platform/money.js';
import { tagPair } from '../../platform/tag-pairs.js';

/** Row shapes of the ClickHouse `spans` and `traces` tables as written (JSONEachRow). */

export interface SpanRow {
  tenant_id: string;
  project_id: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  type: string;
  input: string;
  output: string;
  model: string;
  start_time: string; // DateTime64(9) literal
  end_time: string;
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
  embedding: number[];
  created_at: string; // DateTime64(3) literal
  version: number;
}

export interface TraceRow {
  tenant_id: string;
  project_id: string;
  id: string;
  started_at: string; // DateTime64(3) literal
  ended_at: string;
  name: string;
  input: string;
  output: string;
  session_id: string;
  external_id: string;
  model: string;
  tags: string[];
  tag_map: Record<string, string>;
  tag_pairs: string[];
  metadata: string;
  error: string | null;
  failure_types: string[];
  latency_ms: number;
  cost: number;
  prompt_tokens_total: number;
  completion_tokens_total: number;
  total_token_count: number;
  span_count: number;
  version: number;
  /** 1 on the tombstone of a row whose sorting key moved (an OTLP trace's start); readers of FINAL skip it. */
  is_deleted: 0 | 1;
}

/**
 * A row of `trace_tokens` (clickhouse/009_trace_tokens.sql): the distinct search tokens of a trace's
 * text written by one commit, at the trace row's key as that commit wrote it.
 */
export interface TraceTokenRow {
  tenant_id: string;
  project_id: string;
  started_at: string; // DateTime64(3) literal
  trace_id: string;
  /** Distinct tokens joined by spaces (the text index splits them again: they hold no separator). */
  tokens: string;
  version: number;
}

/** Every column of a row type, in one fixed order (JSONCompactEachRow inserts). */
function columnsOf<Row>(order: Record<keyof Row, true>): readonly (keyof Row & string)[] {
  return Object.keys(order) as (keyof Row & string)[];
}

// Records keyed by the row type: a column added to SpanRow or TraceRow fails to compile until listed.
export const SPAN_INSERT_COLUMNS = columnsOf<SpanRow>({
  tenant_id: true, project_id: true, trace_id: true, span_id: true, parent_span_id: true, name: true, type: true,
  input: true, output: true, model: true, start_time: true, end_time: true, latency_ms: true, prompt_tokens: true,
  completion_tokens: true, cost: true, error: true, failure_type: true, status_code: true, metadata: true,
  otel_trace_id: true, otel_span_id: true, embedding: true, created_at: true, version: true,
});

export const TRACE_INSERT_COLUMNS = columnsOf<TraceRow>({
  tenant_id: true, project_id: true, id: true, started_at: true, ended_at: true, name: true, input: true, output: true,
  session_id: true, external_id: true, model: true, tags: true, tag_map: true, tag_pairs: true, metadata: true,
  error: true, failure_types: true, latency_ms: true, cost: true, prompt_tokens_total: true,
  completion_tokens_total: true, total_token_count: true, span_count: true, version: true, is_deleted: true,
});

export const TOKEN_INSERT_COLUMNS = columnsOf<TraceTokenRow>({
  tenant_id: true, project_id: true, started_at: true, trace_id: true, tokens: true, version: true,
});

/** `key:value` tag entries and tag_map both yield key/value pairs. */
export function tagPairs(tags: readonly string[], tagMap: Readonly<Record<string, string>>): string[] {
  const pairs = new Set<string>();
  for (const tag of tags) {
    const at = tag.indexOf(':');
    if (at > 0 && at < tag.length - 1) pairs.add(tagPair(tag.slice(0, at), tag.slice(at + 1)));
  }
  for (const [key, value] of Object.entries(tagMap)) pairs.add(tagPair(key, value));
  return [...pairs];
}

/**
 * Trace-level fields derived from its spans, shared by native ingest and the OTLP rollup so both
 * paths agree on latency, tokens, cost, model, error and failure types.
 */
export interface SpanSummary {
  startNs: bigint;
  endNs: bigint;
  promptTokens: number;
  completionTokens: number;
  cost: number;
  model: string;
  error: string | null;
  failureType: string;
  type: string;
}

export function summarizeSpans(spans: readonly SpanSummary[]) {
  let start: bigint | undefined;
  let end: bigint | undefined;
  let prompt = 0;
  let completion = 0;
  let cost = 0;
  let model = '';
  let error: string | null = null;
  let errorStart: bigint | undefined;
  const failures = new Set<string>();
  for (const s of spans) {
    if (start === undefined || s.startNs < start) start = s.startNs;
    if (end === undefined || s.endNs > end) end = s.endNs;
    prompt += s.promptTokens;
    completion += s.completionTokens;
    cost = roundUsd(cost + s.cost);
    if (!model && s.model && s.type === 'llm') model = s.model;
    if (s.error && (errorStart === undefined || s.startNs < errorStart)) {
      error = s.error;
      errorStart = s.startNs;
    }
    if (s.failureType) failures.add(s.failureType);
  }
  if (!model) model = spans.find((s) => s.model)?.model ?? '';
  return { start, end, prompt, completion, cost, model, error, failureTypes: [...failures].sort() };
}
