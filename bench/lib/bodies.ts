/**
 * Request bodies for POST /v1/ingest/batch: 100 traces × 10 spans of realistic size (200–800
 * character inputs and outputs, models, tokens, tags, a few failures), or another shape. The
 * traces are described once, independent of the wire format (`traceSpecs`), so that OTLP bodies
 * (otlp-bodies.ts) can carry exactly the same content. A handful of templates is
 * built once; every request then gets ids no other request has by rewriting one id prefix, so a
 * long run needs no gigabytes of pre-built bodies and never sends a duplicate (which would be a 409).
 */
import { randomBytes } from 'node:crypto';
import { traceInput, type TraceInput } from '../../src/modules/ingest/schemas.js';
import { seededRandom } from './random.js';
import {
  CUSTOMERS,
  ENVS,
  FAILURE_ERRORS,
  FAILURE_PERCENT,
  FAILURE_TYPES,
  MODELS,
  PROSE,
  REGIONS,
  SPAN_TYPES,
  TEXT_MIN,
  TEXT_SPREAD,
  TRACE_NAMES,
} from './synthetic.js';

export const TRACES_PER_REQUEST = 100;
export const SPANS_PER_TRACE = SPAN_TYPES.length;
const MARK = 'abcdefab-cdef-abcd'; // replaced per request by `<run>-<request hi>-<request lo>`

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** How many traces a request carries and the types of each trace's spans (their count is the trace's size). */
export interface BodyShape {
  traces: number;
  spanTypes: readonly string[];
  /**
   * The trace's own input and output are its root span's (OTLP has no trace-level text: a trace
   * received over OTLP takes them from its root span), so both formats store the same content.
   */
  traceTextFromRoot?: boolean;
}
export const DEFAULT_SHAPE: BodyShape = { traces: TRACES_PER_REQUEST, spanTypes: SPAN_TYPES };

/** One span of a trace, independent of the wire format. Times are absolute milliseconds. */
export interface SpanSpec {
  index: number;
  parent: number | null;
  name: string;
  type: string;
  input: string;
  output: string;
  model?: string;
  startMs: number;
  endMs: number;
  promptTokens?: number;
  completionTokens?: number;
  error?: string;
  failureType?: (typeof FAILURE_TYPES)[number];
  statusCode: number;
}

/** One trace, independent of the wire format: encoded as native JSON here, as OTLP in otlp-bodies.ts. */
export interface TraceSpec {
  name: string;
  input: string;
  output: string;
  sessionId: string;
  tags: string[];
  tagMap: Record<string, string>;
  metadata: { user_id: string };
  startMs: number;
  spans: SpanSpec[];
}

/**
 * The traces of template `seed`: every value drawn from one seeded generator, in a fixed order (so
 * the default shape gives the same bodies as before this was factored out of the native template).
 */
export function traceSpecs(seed: number, nowMs: number, shape: BodyShape = DEFAULT_SHAPE): TraceSpec[] {
  const rnd = seededRandom(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const text = () => {
    const length = TEXT_MIN + int(TEXT_SPREAD);
    const from = int(PROSE.length - length);
    return PROSE.slice(from, from + length);
  };
  const traces: TraceSpec[] = [];
  for (let t = 0; t < shape.traces; t += 1) {
    const model = MODELS[int(MODELS.length)]!;
    const zeroTokens = int(100) < 5;
    const failure = int(100) < FAILURE_PERCENT ? FAILURE_TYPES[int(FAILURE_TYPES.length)]! : undefined;
    const start = nowMs - 60_000 + int(60_000);
    const step = 10 + int(300);
    const name = TRACE_NAMES[int(TRACE_NAMES.length)]!;
    const input = text();
    const output = text();
    const sessionId = `session-${int(100_000)}`;
    const tags = [`customer:c${int(CUSTOMERS)}`, `env:${ENVS[int(ENVS.length)]}`];
    const tagMap = { region: REGIONS[int(REGIONS.length)]! };
    const metadata = { user_id: `u-${int(50_000)}` };
    const spans = shape.spanTypes.map((type, s): SpanSpec => {
      const llm = type === 'llm';
      const failed = failure !== undefined && s === 1;
      const spanInput = text();
      const spanOutput = text();
      const promptTokens = llm && !zeroTokens ? 50 + int(2000) : undefined;
      const completionTokens = llm && !zeroTokens ? 10 + int(500) : undefined;
      return {
        index: s,
        parent: s === 0 ? null : 0,
        name: `${type}-${s}`,
        type,
        input: spanInput,
        output: spanOutput,
        model: llm ? model : undefined,
        startMs: start + s * step,
        endMs: start + (s + 1) * step,
        promptTokens,
        completionTokens,
        error: failed ? FAILURE_ERRORS[failure] : undefined,
        failureType: failed ? failure : undefined,
        statusCode: failed ? 500 : 200,
      };
    });
    const fromRoot = shape.traceTextFromRoot === true;
    traces.push({
      name,
      input: fromRoot ? spans[0]!.input : input,
      output: fromRoot ? spans[0]!.output : output,
      sessionId,
      tags,
      tagMap,
      metadata,
      startMs: start,
      spans,
    });
  }
  return traces;
}

function template(seed: number, nowMs: number, shape: BodyShape): string {
  const traces: TraceInput[] = traceSpecs(seed, nowMs, shape).map((spec, t) => ({
    id: `${MARK}-${hex(t, 4)}-ffffffffffff`,
    name: spec.name,
    input: spec.input,
    output: spec.output,
    session_id: spec.sessionId,
    tags: spec.tags,
    tag_map: spec.tagMap,
    metadata: spec.metadata,
    spans: spec.spans.map((span) => ({
      id: `${MARK}-${hex(t, 4)}-${hex(span.index, 12)}`,
      parent_span_id: span.parent === null ? null : `${MARK}-${hex(t, 4)}-${hex(span.parent, 12)}`,
      name: span.name,
      type: span.type,
      input: span.input,
      output: span.output,
      model: span.model,
      start_time: new Date(span.startMs).toISOString(),
      end_time: new Date(span.endMs).toISOString(),
      prompt_tokens: span.promptTokens,
      completion_tokens: span.completionTokens,
      error: span.error,
      failure_type: span.failureType,
      status_code: span.statusCode,
    })),
  }));
  // Check the templates against the ingest schema once, so a drift of the schema fails here, loudly.
  for (const trace of traces) traceInput.parse(trace);
  return JSON.stringify({ traces });
}

export interface BodyFactory {
  /** The JSON body of request number `index`: unique ids, content from template `index % templates`. */
  body(index: number): string;
  bytesPerBody: number;
}

/** Native bodies of `shape` (default: 100 traces × 10 spans, what bench:ingest sends). */
export function bodyFactory(templates = 8, nowMs = Date.now(), shape: BodyShape = DEFAULT_SHAPE): BodyFactory {
  const run = hex(randomBytes(4).readUInt32BE(), 8);
  const built = Array.from({ length: templates }, (_, i) => template(i + 1, nowMs, shape));
  return {
    body(index: number) {
      const prefix = `${run}-${hex(Math.floor(index / 65536) % 65536, 4)}-${hex(index % 65536, 4)}`;
      return built[index % templates]!.replaceAll(MARK, prefix);
    },
    bytesPerBody: Math.round(built.reduce((sum, b) => sum + Buffer.byteLength(b), 0) / templates),
  };
}
