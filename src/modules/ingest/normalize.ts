import { newId } from '../../platform/ids.js';
import { isoToNanos, millisToClickHouse, nanosToClickHouse, nanosToMillis } from '../../platform/time.js';
import { classifyFailure } from './failures.js';
import { computeCost, findPrice, type TokenPrice } from './prices.js';
import { summarizeSpans, tagPairs, type SpanRow, type TraceRow } from './rows.js';
import type { TraceInput } from './schemas.js';

export interface FieldProblem {
  path: string;
  message: string;
}

export interface NormalizedTrace {
  trace: TraceRow;
  spans: SpanRow[];
  startedAtMs: number;
}

export interface IngestScope {
  tenantId: string;
  projectId: string;
  prices: ReadonlyMap<string, TokenPrice>;
  /** Ingest time in ms; also the row version. */
  now: number;
}

/** Turns one validated native trace into ClickHouse rows, or names the fields that contradict each other. */
export function normalizeTrace(input: TraceInput, scope: IngestScope): NormalizedTrace | FieldProblem[] {
  const problems: FieldProblem[] = [];
  const traceId = input.id ?? newId();
  const createdAt = millisToClickHouse(scope.now);
  const version = scope.now;

  const spans: SpanRow[] = [];
  const summaries = input.spans.map((s, i) => {
    const startNs = isoToNanos(s.start_time);
    const endNs = isoToNanos(s.end_time);
    if (endNs < startNs) problems.push({ path: `spans.${i}.end_time`, message: 'must not be before start_time' });
    const promptTokens = s.prompt_tokens ?? 0;
    const completionTokens = s.completion_tokens ?? 0;
    const model = s.model ?? '';
    const cost = s.cost ?? (model ? computeCost(findPrice(model, scope.prices), promptTokens, completionTokens) : 0);
    const failureType = classifyFailure(s.failure_type, s.status_code, s.error) ?? '';
    spans.push({
      tenant_id: scope.tenantId,
      project_id: scope.projectId,
      trace_id: traceId,
      span_id: s.id ?? newId(),
      parent_span_id: s.parent_span_id ?? null,
      name: s.name,
      type: s.type,
      input: s.input ?? '',
      output: s.output ?? '',
      model,
      start_time: nanosToClickHouse(startNs),
      end_time: nanosToClickHouse(endNs),
      latency_ms: Math.max(0, nanosToMillis(endNs - startNs)),
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      cost,
      error: s.error ?? null,
      failure_type: failureType,
      status_code: s.status_code ?? 0,
      metadata: JSON.stringify(s.metadata ?? {}),
      otel_trace_id: '',
      otel_span_id: '',
      embedding: s.embedding ?? [],
      created_at: createdAt,
      version,
    });
    return { startNs, endNs, promptTokens, completionTokens, cost, model, error: s.error ?? null, failureType, type: s.type };
  });

  const summary = summarizeSpans(summaries);
  const startNs = input.started_at ? isoToNanos(input.started_at) : (summary.start ?? BigInt(scope.now) * 1_000_000n);
  const endNs = input.ended_at ? isoToNanos(input.ended_at) : (summary.end ?? startNs);
  if (endNs < startNs) problems.push({ path: 'ended_at', message: 'must not be before started_at' });
  const seen = new Set<string>();
  spans.forEach((s, i) => {
    if (seen.has(s.span_id)) problems.push({ path: `spans.${i}.id`, message: 'duplicate span id in this trace' });
    seen.add(s.span_id);
  });
  if (problems.length > 0) return problems;

  const startedAtMs = nanosToMillis(startNs);
  const tags = input.tags ?? [];
  const tagMap = input.tag_map ?? {};
  const trace: TraceRow = {
    tenant_id: scope.tenantId,
    project_id: scope.projectId,
    id: traceId,
    started_at: millisToClickHouse(startedAtMs),
    ended_at: millisToClickHouse(nanosToMillis(endNs)),
    name: input.name,
    input: input.input,
    output: input.output,
    session_id: input.session_id ?? '',
    external_id: input.external_id ?? '',
    model: input.model ?? summary.model,
    tags,
    tag_map: tagMap,
    tag_pairs: tagPairs(tags, tagMap),
    metadata: JSON.stringify(input.metadata ?? {}),
    error: input.error ?? summary.error,
    failure_types: summary.failureTypes,
    latency_ms: Math.max(0, nanosToMillis(endNs) - startedAtMs),
    cost: summary.cost,
    prompt_tokens_total: summary.prompt,
    completion_tokens_total: summary.completion,
    total_token_count: summary.prompt + summary.completion,
    span_count: spans.length,
    version,
  };
  return { trace, spans, startedAtMs };
}
