import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { spanParams, traceFilterShape, traceIdParams, type Span, type SpanSummary, type Trace, type TraceDetail, type TraceTree } from '../../modules/traces/schemas.js';
import { segment, type LooptraceApi } from './api.js';
import { clip, clipJson, registerListTool, registerReadTool, textChars } from './tool.js';

/** The API's filters of GET /v1/traces, with the descriptions an agent needs where the API's are terse. */
const traceFilters = {
  ...traceFilterShape,
  project_id: traceFilterShape.project_id.describe('only traces of this project (list_projects gives the ids); default: every project of the key'),
  from: traceFilterShape.from.describe('inclusive lower bound of started_at, ISO 8601 with offset, e.g. 2026-11-26T00:00:00Z for "today" in UTC'),
  to: traceFilterShape.to.describe('inclusive upper bound of started_at, ISO 8601 with offset; >= from'),
  name: traceFilterShape.name.describe('exact trace name, e.g. the operation "checkout"'),
  session_id: traceFilterShape.session_id.describe('only the traces of this session (a conversation or user session)'),
  model: traceFilterShape.model.describe('exact model name of a span, e.g. gpt-4o-mini'),
  tag_key: traceFilterShape.tag_key.describe('with tag_value: traces with the tag key:value (a tag "env:prod", or tag_map {"env": "prod"})'),
  tag_value: traceFilterShape.tag_value.describe('with tag_key: traces with the tag key:value'),
};

const traceId = traceIdParams.shape.id;

/** A trace of a list, its long texts cut. */
function traceSummary(trace: Trace, chars: number) {
  return {
    ...trace,
    input: clip(trace.input, chars),
    output: clip(trace.output, chars),
    error: clip(trace.error, chars),
    metadata: clipJson(trace.metadata, chars),
  };
}

/**
 * Up to this many characters of span inputs and outputs in all, get_trace shows them (cut at
 * text_chars); above, it answers from the span tree alone and leaves them to get_span, so a trace of
 * thousands of spans is never read whole.
 */
const SMALL_TRACE_CHARS = 100_000;

type AnySpan = Span | SpanSummary;

/** A span without the fields that repeat the trace's or are empty for native spans, its long texts cut. */
function spanView(span: AnySpan, chars: number) {
  const { tenant_id: _tenant, trace_id: _trace, created_at: _created, otel_trace_id, otel_span_id, otel_parent_span_id, ...rest } = span;
  const texts =
    'input' in span
      ? { input: clip(span.input, chars), output: clip(span.output, chars), metadata: clipJson(span.metadata, chars) }
      : {};
  return { ...rest, ...texts, error: clip(span.error, chars), ...(otel_span_id ? { otel_trace_id, otel_span_id, otel_parent_span_id } : {}) };
}

const failed = (span: AnySpan): boolean => span.error !== null || span.failure_type !== null;

/** Which spans a capped answer shows: failing spans first, then the others, each kept in trace order. */
function pickSpans<S extends AnySpan>(spans: readonly S[], max: number, onlyErrors: boolean): S[] {
  const candidates = onlyErrors ? spans.filter(failed) : spans;
  if (candidates.length <= max) return [...candidates];
  const chosen = new Set([...candidates.filter(failed), ...candidates.filter((s) => !failed(s))].slice(0, max));
  return candidates.filter((s) => chosen.has(s));
}

/** The span tree, or the whole detail when its span texts are small enough to show. */
async function readTrace(api: LooptraceApi, id: string): Promise<{ trace: TraceTree | TraceDetail; spanTextChars: number }> {
  const tree = await api.get<TraceTree>(`/v1/traces/${segment(id)}/tree`);
  const spanTextChars = tree.spans.reduce((n, s) => n + s.input_chars + s.output_chars, 0);
  if (spanTextChars > SMALL_TRACE_CHARS) return { trace: tree, spanTextChars };
  return { trace: await api.get<TraceDetail>(`/v1/traces/${segment(id)}`), spanTextChars };
}

export function registerTraceTools(server: McpServer, api: LooptraceApi): void {
  registerListTool(
    server,
    api,
    'list_traces',
    {
      title: 'List and search traces',
      description:
        'Traces (one run of the LLM application each: a request, a job, an agent turn) newest first, with every filter of GET /v1/traces. ' +
        'To find failures: failure_type (timeout, rate_limit, invalid_response, context_length), q (full-text search over trace and span names, inputs, outputs and errors, e.g. q="checkout timeout"), ' +
        'name (exact trace name), from/to (started_at range), latency and token bounds, tags, session, model. ' +
        'Each trace has error, failure_types, latency_ms, token counts, cost and span_count; inputs, outputs and metadata are cut at text_chars. ' +
        'Pages: pass next_cursor as cursor while has_more is true. Next step: get_trace for the spans of one trace.',
      filters: traceFilters,
      text: { chars: 300, what: 'inputs, outputs, errors and metadata' },
    },
    { path: '/v1/traces', key: 'traces', view: traceSummary },
  );

  registerReadTool(
    server,
    'get_trace',
    {
      title: 'Get one trace with its spans',
      description:
        'One trace with its spans (LLM calls, tool calls, retrieval steps...) in order, each with parent_span_id, timing, model, tokens, cost, error and failure_type: ' +
        'the place to see where and why a run failed. Large traces are summarised: texts are cut at text_chars, at most max_spans spans are shown ' +
        '(spans with an error first; spans_omitted counts the others), and when the span inputs and outputs are very long in all they are left out ' +
        '(span_texts says so; input_chars and output_chars give their lengths). only_errors shows the failing spans only; get_span gives one span whole. ' +
        'list_failure_clusters with trace_id gives the failure clusters the trace belongs to.',
      inputSchema: {
        id: traceId,
        text_chars: textChars(500, 'inputs, outputs, errors and metadata'),
        max_spans: z.number().int().min(1).max(5_000).default(100).describe('at most this many spans are shown, those with an error first (default 100)'),
        only_errors: z.boolean().default(false).describe('show only the spans that have an error or a failure type'),
      },
    },
    async ({ id, text_chars, max_spans, only_errors }) => {
      const { trace: read, spanTextChars } = await readTrace(api, id);
      const { spans, ...trace } = read;
      const shown = pickSpans<AnySpan>(spans, max_spans, only_errors);
      return {
        trace: traceSummary(trace, text_chars),
        spans: shown.map((s) => spanView(s, text_chars)),
        failing_span_count: spans.filter(failed).length,
        spans_omitted: spans.length - shown.length,
        span_texts:
          spanTextChars > SMALL_TRACE_CHARS
            ? `left out: the span inputs and outputs have ${spanTextChars} characters in all (input_chars and output_chars per span); get_span gives one span whole`
            : `included, each cut at ${text_chars} characters`,
      };
    },
  );

  registerReadTool(
    server,
    'get_span',
    {
      title: 'Get one span whole',
      description:
        'One span of a trace with its full input, output, error and metadata (for a span whose texts get_trace cut). ' +
        'Texts longer than text_chars (default 20,000) are still cut, saying so.',
      inputSchema: {
        trace_id: traceId,
        span_id: spanParams.shape.span_id.describe('the span id, as get_trace shows it'),
        text_chars: textChars(20_000, 'input, output, error and metadata'),
      },
    },
    async ({ trace_id, span_id, text_chars }) => spanView(await api.get<Span>(`/v1/traces/${segment(trace_id)}/spans/${segment(span_id)}`), text_chars),
  );
}
