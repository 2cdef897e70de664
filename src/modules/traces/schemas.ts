import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';
import { FAILURE_TYPES } from '../ingest/types.js';
import { traceUuid } from '../../platform/otel-ids.js';
import { SEARCH_MAX_LENGTH, SEARCH_MAX_TOKENS, searchTokens } from './search.js';

const count = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const instant = z.iso.datetime({ offset: true });
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f]+$/;

/** Filters shared by GET /v1/traces and GET /v1/traces/export. */
export const traceFilterShape = {
  project_id: z.guid().optional(),
  failure_type: z.enum(FAILURE_TYPES).optional().describe('matches traces with at least one span of this failure type'),
  latency_min: count.optional().describe('inclusive, milliseconds'),
  latency_max: count.optional().describe('inclusive, milliseconds; >= latency_min'),
  token_count_min: count.optional().describe('inclusive; any non-zero minimum excludes traces with total_token_count 0'),
  token_count_max: count.optional().describe('inclusive; >= token_count_min'),
  // Ingest refuses control characters in tag keys, so a key can never contain the pair separator.
  tag_key: z.string().min(1).max(400).regex(NO_CONTROL_CHARACTERS, 'no control characters').optional(),
  tag_value: z.string().min(1).max(200).optional(),
  from: instant.optional().describe('inclusive lower bound of started_at'),
  to: instant.optional().describe('inclusive upper bound of started_at; >= from'),
  name: z.string().min(1).max(1_000).optional().describe('exact trace name'),
  session_id: z.string().min(1).max(256).optional(),
  model: z.string().min(1).max(200).optional(),
  q: z
    .string()
    .min(1)
    .max(SEARCH_MAX_LENGTH)
    .superRefine((q, ctx) => {
      if (q.length === 0 || q.length > SEARCH_MAX_LENGTH) return; // already refused by its length
      const count = searchTokens(q).length;
      if (count === 0) ctx.addIssue({ code: 'custom', message: 'must contain a letter or digit' });
      if (count > SEARCH_MAX_TOKENS) ctx.addIssue({ code: 'custom', message: `at most ${SEARCH_MAX_TOKENS} distinct tokens` });
    })
    .optional()
    .describe(
      `full-text search: traces whose trace or span name, input, output or error contain every token of q, case-insensitively (1-${SEARCH_MAX_LENGTH} characters, 1-${SEARCH_MAX_TOKENS} distinct tokens). ` +
        'A token is a run of ASCII letters and digits and non-ASCII characters (any script); every other ASCII character (space, punctuation, _) separates tokens, non-ASCII punctuation does not. ' +
        'Whole tokens only: error matches "Error:" and "error_code" but not "errors" or "err"; Chinese or Japanese text without ASCII separators is one token per run (docs/api-decisions.md)',
    ),
};

type Bounds = { [K in 'latency_min' | 'latency_max' | 'token_count_min' | 'token_count_max' | 'from' | 'to']?: number | string };

/** min <= max and from <= to, each failure naming the parameter that breaks it. */
export function checkBounds(query: Bounds, ctx: z.RefinementCtx): void {
  const pairs: [keyof Bounds, keyof Bounds][] = [
    ['latency_min', 'latency_max'],
    ['token_count_min', 'token_count_max'],
  ];
  for (const [min, max] of pairs) {
    const low = query[min];
    const high = query[max];
    if (typeof low === 'number' && typeof high === 'number' && low > high) {
      ctx.addIssue({ code: 'custom', path: [max], message: `must be >= ${min}` });
    }
  }
  if (typeof query.from === 'string' && typeof query.to === 'string' && Date.parse(query.from) > Date.parse(query.to)) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be >= from' });
  }
}

export const listTracesQuery = z.object({ ...traceFilterShape, ...pageQuery }).superRefine(checkBounds);
export type TraceFilterQuery = { [K in keyof typeof traceFilterShape]?: z.infer<(typeof traceFilterShape)[K]> };

export const EXPORT_FORMATS = ['csv', 'jsonl', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const exportTracesQuery = z
  .object({
    ...traceFilterShape,
    format: z
      .enum(EXPORT_FORMATS)
      .default('csv')
      .describe(
        'csv, jsonl or parquet. Parquet has the same columns with their types: UUIDs as UUID, created_at as TIMESTAMP(MILLIS, UTC), numbers as integers and doubles, null where JSONL has null; Snappy-compressed',
      ),
    limit: z.coerce.number().int().min(1).max(10_000_000).optional().describe('maximum number of rows (spans) to export'),
  })
  .superRefine(checkBounds);

const TRACE_ID_FORMS = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$/;

/**
 * A trace id in a path: the trace UUID, or the OTel trace id (32 hex digits, any case) as it
 * appears in OTel logs. Ingest stores an OTLP trace under the UUID made of the same 16 bytes
 * (platform/otel-ids.ts), so the hex form maps to its UUID without a lookup. Both come out as a
 * lowercase UUID.
 */
export const traceIdParams = z.object({
  id: z
    .string()
    .regex(TRACE_ID_FORMS, 'must be a trace UUID (8-4-4-4-12 hex digits) or an OTel trace id (32 hex digits)')
    .transform((id) => (id.length === 32 ? traceUuid(id.toLowerCase()) : id.toLowerCase()))
    .describe(
      'The trace UUID (8-4-4-4-12 hex digits), or the OTel trace id as 32 hex digits (either case): an OTLP trace is stored under the UUID of the same 16 bytes, so both name the same trace',
    ),
});

export const trace = z
  .object({
    id: z.guid(),
    project_id: z.guid(),
    error: z.string().nullable(),
    tags: z.array(z.string()),
    tag_map: z.record(z.string(), z.string()),
    started_at: isoDate,
    ended_at: isoDate,
    session_id: z.string(),
    external_id: z.string(),
    name: z.string(),
    input: z.string(),
    output: z.string(),
    model: z.string(),
    latency_ms: z.number().int(),
    cost: z.number(),
    total_token_count: z.number().int(),
    prompt_tokens_total: z.number().int(),
    completion_tokens_total: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    span_count: z.number().int(),
    failure_types: z.array(z.string()).describe('additive: the failure types of its spans (timeout, rate_limit, invalid_response, context_length)'),
  })
  .describe('Trace');
export type Trace = z.infer<typeof trace>;

export const span = z
  .object({
    id: z.guid(),
    created_at: isoDate,
    tenant_id: z.guid(),
    trace_id: z.guid(),
    name: z.string(),
    type: z.string(),
    parent_span_id: z.guid().nullable(),
    input: z.string(),
    output: z.string(),
    model: z.string(),
    latency_ms: z.number().int(),
    cost: z.number(),
    error: z.string().nullable(),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    start_time: isoDate,
    end_time: isoDate,
    otel_trace_id: z.string().describe('the OTel trace id (32 lowercase hex digits) of a span received over OTLP; empty for natively ingested spans'),
    otel_span_id: z.string().describe('the OTel span id (16 lowercase hex digits) of a span received over OTLP; empty for natively ingested spans'),
    otel_parent_span_id: z
      .string()
      .nullable()
      .describe("additive: the OTel span id (16 lowercase hex digits) of the span's parent, for a span received over OTLP that has one; null for root spans and natively ingested spans"),
    failure_type: z.string().nullable().describe('additive: the failure type classified at ingest, null when none'),
  })
  .describe('Span');
export type Span = z.infer<typeof span>;

/** A Span in a trace's span tree: no input, output or metadata, only how long input and output are. */
export const spanSummary = span
  .omit({ input: true, output: true, metadata: true })
  .extend({
    input_chars: z.number().int().describe('length of the span input in Unicode characters (code points); 0 when it is empty'),
    output_chars: z.number().int().describe('length of the span output in Unicode characters (code points); 0 when it is empty'),
  })
  .describe('SpanSummary');
export type SpanSummary = z.infer<typeof spanSummary>;

/** The fields a trace read by id has beyond a listed Trace, with its spans as `spans`. */
const traceWithSpans = <S extends z.ZodType>(spans: S) =>
  trace.extend({
    otel_trace_id: z
      .string()
      .nullable()
      .describe('additive, detail only: the OTel trace id (32 lowercase hex digits) of a trace received over OTLP; null for natively ingested traces'),
    control_loop_depth: z.number().int(),
    spans: z.array(spans),
  });

export const traceDetail = traceWithSpans(span).describe('TraceDetail');
export type TraceDetail = z.infer<typeof traceDetail>;

export const traceTree = traceWithSpans(spanSummary).describe('TraceTree');
export type TraceTree = z.infer<typeof traceTree>;

export const spanParams = traceIdParams.extend({
  span_id: z.guid().transform((id) => id.toLowerCase()).describe('the span UUID (the `id` of a Span)'),
});

export const traceList = z
  .object({ traces: z.array(trace), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('TraceList');
