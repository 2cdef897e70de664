import { roundUsd } from '../../platform/money.js';

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
}

/** Separator of tag key and value in `tag_pairs`; tags may not contain control characters. */
export const TAG_PAIR_SEPARATOR = '\u001f';
export const tagPair = (key: string, value: string): string => `${key}${TAG_PAIR_SEPARATOR}${value}`;

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
