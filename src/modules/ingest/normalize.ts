import type { FieldProblem } from '../../platform/http-errors.js';
import { newId } from '../../platform/ids.js';
import { implausibleTime, isoToNanos, millisToClickHouse, nanosToClickHouse, nanosToMillis } from '../../platform/time.js';
import { classifyFailure } from './failures.js';
import type { FailureType } from './types.js';
import { computeCost, findPrice, type TokenPrice } from '../pricing/service.js';
import { summarizeSpans, tagPairs, type SpanRow, type SpanSummary, type TraceRow } from './rows.js';
import type { TraceInput } from './schemas.js';

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

function checkPlausible(problems: FieldProblem[], path: string, ns: bigint, nowMs: number): void {
  const implausible = implausibleTime(ns, nowMs);
  if (implausible) problems.push({ path, message: implausible });
}

/** Turns one validated native trace into ClickHouse rows, or names the fields that contradict each other. */
export function normalizeTrace(input: TraceInput, scope: IngestScope): NormalizedTrace | FieldProblem[] {
  const problems: FieldProblem[] = [];
  const traceId = input.id ?? newId();
  const version = scope.now;

  const spans: SpanRow[] = [];
  const summaries = input.spans.map((s, i) => {
    const startNs = isoToNanos(s.start_time);
    const endNs = isoToNanos(s.end_time);
    if (endNs < startNs) problems.push({ path: `spans.${i}.end_time`, message: 'must not be before start_time' });
    checkPlausible(problems, `spans.${i}.start_time`, startNs, scope.now);
    checkPlausible(problems, `spans.${i}.end_time`, endNs, scope.now);
    const { row, summary } = buildSpan(
      {
        traceId,
        spanId: s.id ?? newId(),
        parentSpanId: s.parent_span_id ?? null,
        name: s.name,
        type: s.type,
        input: s.input ?? '',
        output: s.output ?? '',
        model: s.model ?? '',
        startNs,
        endNs,
        promptTokens: s.prompt_tokens ?? 0,
        completionTokens: s.completion_tokens ?? 0,
        cost: s.cost,
        error: s.error ?? null,
        failureType: s.failure_type,
        statusCode: s.status_code,
        metadata: s.metadata ?? {},
        otelTraceId: '',
        otelSpanId: '',
        embedding: s.embedding ?? [],
      },
      scope,
    );
    spans.push(row);
    return summary;
  });

  const summary = summarizeSpans(summaries);
  const startNs = input.started_at ? isoToNanos(input.started_at) : (summary.start ?? BigInt(scope.now) * 1_000_000n);
  const endNs = input.ended_at ? isoToNanos(input.ended_at) : (summary.end ?? startNs);
  if (endNs < startNs) problems.push({ path: 'ended_at', message: 'must not be before started_at' });
  if (input.started_at) checkPlausible(problems, 'started_at', startNs, scope.now);
  if (input.ended_at) checkPlausible(problems, 'ended_at', endNs, scope.now);
  const seen = new Set<string>();
  spans.forEach((s, i) => {
    if (seen.has(s.span_id)) problems.push({ path: `spans.${i}.id`, message: 'duplicate span id in this trace' });
    seen.add(s.span_id);
  });
  if (problems.length > 0) return problems;

  const trace = buildTraceRow({
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    id: traceId,
    startNs,
    endNs,
    name: input.name,
    input: input.input,
    output: input.output,
    sessionId: input.session_id ?? '',
    externalId: input.external_id ?? '',
    model: input.model ?? summary.model,
    tags: input.tags ?? [],
    tagMap: input.tag_map ?? {},
    metadata: input.metadata ?? {},
    error: input.error ?? summary.error,
    summary,
    spanCount: spans.length,
    version,
  });
  return { trace, spans, startedAtMs: nanosToMillis(startNs) };
}

/** One span as both ingest paths (native and OTLP) know it, before pricing and failure classification. */
export interface SpanFields {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  type: string;
  input: string;
  output: string;
  model: string;
  startNs: bigint;
  endNs: bigint;
  promptTokens: number;
  completionTokens: number;
  /** Undefined: priced from the tenant's price book. */
  cost: number | undefined;
  error: string | null;
  failureType: FailureType | null | undefined;
  statusCode: number | null | undefined;
  metadata: Record<string, unknown>;
  otelTraceId: string;
  otelSpanId: string;
  embedding: number[];
}

/** The `spans` row of one span (cost from the price book when absent, failure type classified) and its summary. */
export function buildSpan(f: SpanFields, scope: IngestScope): { row: SpanRow; summary: SpanSummary } {
  const cost = f.cost ?? (f.model ? computeCost(findPrice(f.model, scope.prices), f.promptTokens, f.completionTokens) : 0);
  const failureType = classifyFailure(f.failureType, f.statusCode, f.error) ?? '';
  const row: SpanRow = {
    tenant_id: scope.tenantId,
    project_id: scope.projectId,
    trace_id: f.traceId,
    span_id: f.spanId,
    parent_span_id: f.parentSpanId,
    name: f.name,
    type: f.type,
    input: f.input,
    output: f.output,
    model: f.model,
    start_time: nanosToClickHouse(f.startNs),
    end_time: nanosToClickHouse(f.endNs),
    latency_ms: Math.max(0, nanosToMillis(f.endNs - f.startNs)),
    prompt_tokens: f.promptTokens,
    completion_tokens: f.completionTokens,
    cost,
    error: f.error,
    failure_type: failureType,
    status_code: f.statusCode ?? 0,
    metadata: JSON.stringify(f.metadata),
    otel_trace_id: f.otelTraceId,
    otel_span_id: f.otelSpanId,
    embedding: f.embedding,
    created_at: millisToClickHouse(scope.now),
    version: scope.now,
  };
  const summary: SpanSummary = {
    startNs: f.startNs,
    endNs: f.endNs,
    promptTokens: f.promptTokens,
    completionTokens: f.completionTokens,
    cost,
    model: f.model,
    error: f.error,
    failureType,
    type: f.type,
  };
  return { row, summary };
}

export interface TraceFields {
  tenantId: string;
  projectId: string;
  id: string;
  startNs: bigint;
  endNs: bigint;
  name: string;
  input: string;
  output: string;
  sessionId: string;
  externalId: string;
  model: string;
  tags: string[];
  tagMap: Record<string, string>;
  metadata: Record<string, unknown>;
  error: string | null;
  /** Token, cost and failure totals over the trace's spans. */
  summary: Pick<ReturnType<typeof summarizeSpans>, 'prompt' | 'completion' | 'cost' | 'failureTypes'>;
  spanCount: number;
  version: number;
}

/** The `traces` row, shared by native ingest and the OTLP rollup: times at ms precision, latency from them. */
export function buildTraceRow(f: TraceFields): TraceRow {
  const startedAtMs = nanosToMillis(f.startNs);
  const endedAtMs = nanosToMillis(f.endNs);
  return {
    tenant_id: f.tenantId,
    project_id: f.projectId,
    id: f.id,
    started_at: millisToClickHouse(startedAtMs),
    ended_at: millisToClickHouse(endedAtMs),
    name: f.name,
    input: f.input,
    output: f.output,
    session_id: f.sessionId,
    external_id: f.externalId,
    model: f.model,
    tags: f.tags,
    tag_map: f.tagMap,
    tag_pairs: tagPairs(f.tags, f.tagMap),
    metadata: JSON.stringify(f.metadata),
    error: f.error,
    failure_types: f.summary.failureTypes,
    latency_ms: Math.max(0, endedAtMs - startedAtMs),
    cost: f.summary.cost,
    prompt_tokens_total: f.summary.prompt,
    completion_tokens_total: f.summary.completion,
    total_token_count: f.summary.prompt + f.summary.completion,
    span_count: f.spanCount,
    version: f.version,
    is_deleted: 0,
  };
}
