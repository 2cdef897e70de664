import { classifyFailure } from '../failures.js';
import { FAILURE_TYPES, type FailureType } from '../types.js';
import type { SpanFields } from '../normalize.js';
import { AttributeBag, type AttrValue, type Attributes } from './attributes.js';
import type { OtlpSpan } from './decode.js';
import { isSpanHex, isTraceHex, spanUuid, traceUuid } from '../../../platform/otel-ids.js';
import { ATTR } from './semconv.js';
import { implausibleTime } from '../../../platform/time.js';

/*
 * One OTLP span → the span fields of the `spans` table. The table of which attribute feeds which
 * field, and in which order, is in docs/ingest.md; ATTR (semconv.ts) holds the key lists.
 */

export type MappedSpan = { ok: true; fields: SpanFields; traceHex: string } | { ok: false; reason: string };

// ClickHouse DateTime64(9) ends at 2262-04-11 (the int64 nanosecond range).
const MAX_NS = 9_223_372_036_854_775_807n;
const MAX_NAME = 1_000;
const MAX_TOKENS = 1_000_000_000;
const STATUS_ERROR = 2;
const STATUS_UNSET = 0;
const KIND_NAMES = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

const OPENINFERENCE_KINDS: Record<string, string> = {
  LLM: 'llm',
  CHAIN: 'chain',
  TOOL: 'tool',
  RETRIEVER: 'retrieval',
  EMBEDDING: 'embedding',
  AGENT: 'agent',
  RERANKER: 'reranker',
  GUARDRAIL: 'guardrail',
  EVALUATOR: 'evaluator',
  PROMPT: 'prompt',
  UNKNOWN: 'span',
};

const GEN_AI_OPERATIONS: Record<string, string> = {
  chat: 'llm',
  text_completion: 'llm',
  generate_content: 'llm',
  completion: 'llm',
  embeddings: 'embedding',
  embedding: 'embedding',
  execute_tool: 'tool',
  invoke_agent: 'agent',
  create_agent: 'agent',
};

const LLM_REQUEST_TYPES: Record<string, string> = { chat: 'llm', completion: 'llm', embedding: 'embedding', rerank: 'reranker' };

const lower = (v: AttrValue | undefined): string => (typeof v === 'string' ? v.trim().toLowerCase() : '');
const asText = (v: AttrValue | undefined): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));

/** Span type: explicit (`looptrace.span.type`), then the framework's span kind, then GenAI hints; else 'span'. */
function spanType(bag: AttributeBag): string {
  const explicit = lower(bag.peek(ATTR.type));
  if (explicit) {
    bag.take(ATTR.type);
    return explicit.slice(0, 64);
  }
  const oi = bag.peek('openinference.span.kind');
  if (typeof oi === 'string' && oi) {
    bag.take('openinference.span.kind');
    return OPENINFERENCE_KINDS[oi.toUpperCase()] ?? lower(oi).slice(0, 64);
  }
  const tl = lower(bag.peek('traceloop.span.kind'));
  if (tl) {
    bag.take('traceloop.span.kind');
    return tl === 'unknown' ? 'span' : tl.slice(0, 64);
  }
  const operation = GEN_AI_OPERATIONS[lower(bag.peek('gen_ai.operation.name'))];
  if (operation) return operation;
  const requestType = LLM_REQUEST_TYPES[lower(bag.peek('llm.request.type'))];
  if (requestType) return requestType;
  return ATTR.llmHints.some((k) => bag.has(k)) ? 'llm' : 'span';
}

/** Chat messages as one JSON array of {role, content, …}. */
const messagesText = (messages: readonly Record<string, AttrValue>[]): string => JSON.stringify(messages);

/** A single completion reads best as its content; several stay a JSON array. */
function completionText(messages: readonly Record<string, AttrValue>[]): string {
  if (messages.length === 1) {
    const only = messages[0]!;
    if (typeof only.content === 'string') return only.content;
    if (typeof only.message === 'string') return only.message;
  }
  return JSON.stringify(messages);
}

type SpanEvent = OtlpSpan['events'][number];

/** Prompt and completion from GenAI events, and the events they consumed. */
function fromEvents(events: readonly SpanEvent[]) {
  const used = new Set<SpanEvent>();
  let input: string | undefined;
  let output: string | undefined;
  const inputMessages: Record<string, AttrValue>[] = [];
  const outputMessages: Record<string, AttrValue>[] = [];
  for (const e of events) {
    if (e.name === 'gen_ai.content.prompt' && e.attributes['gen_ai.prompt'] !== undefined) {
      input ??= asText(e.attributes['gen_ai.prompt']);
      used.add(e);
    } else if (e.name === 'gen_ai.content.completion' && e.attributes['gen_ai.completion'] !== undefined) {
      output ??= asText(e.attributes['gen_ai.completion']);
      used.add(e);
    } else if (/^gen_ai\.(system|user|assistant|tool)\.message$/.test(e.name)) {
      inputMessages.push({ role: e.name.split('.')[1]!, ...e.attributes });
      used.add(e);
    } else if (e.name === 'gen_ai.choice') {
      outputMessages.push({ ...e.attributes });
      used.add(e);
    }
  }
  if (input === undefined && inputMessages.length > 0) input = messagesText(inputMessages);
  if (output === undefined && outputMessages.length > 0) output = completionText(outputMessages);
  return { input, output, used };
}

function spanInput(bag: AttributeBag, events: ReturnType<typeof fromEvents>): string {
  const direct = bag.text(ATTR.input);
  if (direct !== undefined) return direct;
  for (const [prefix, strip] of ATTR.inputMessages) {
    const messages = bag.indexed(prefix, strip);
    if (messages.length > 0) return messagesText(messages);
  }
  return events.input ?? '';
}

function spanOutput(bag: AttributeBag, events: ReturnType<typeof fromEvents>): string {
  const direct = bag.text(ATTR.output);
  if (direct !== undefined) return direct;
  for (const [prefix, strip] of ATTR.outputMessages) {
    const messages = bag.indexed(prefix, strip);
    if (messages.length > 0) return completionText(messages);
  }
  return events.output ?? '';
}

function exceptionText(events: readonly SpanEvent[]): string | undefined {
  const e = events.find((x) => x.name === 'exception');
  if (!e) return undefined;
  const type = asText(e.attributes['exception.type']);
  const message = asText(e.attributes['exception.message']);
  return [type, message].filter(Boolean).join(': ') || 'exception';
}

/**
 * Error text: `looptrace.error`, else a status of ERROR (its message, else the exception event's
 * type and message), else an exception event on a span whose status is unset. A span explicitly
 * set OK has no error even if it recorded a (handled) exception.
 */
function spanError(bag: AttributeBag, span: OtlpSpan): string | null {
  const explicit = bag.text([ATTR.error]);
  if (explicit !== undefined) return explicit;
  if (span.status.code === STATUS_ERROR) return span.status.message || exceptionText(span.events) || 'error';
  if (span.status.code === STATUS_UNSET) return exceptionText(span.events) ?? null;
  return null;
}

function failureType(bag: AttributeBag): FailureType | null {
  const v = lower(bag.peek(ATTR.failureType));
  if (!(FAILURE_TYPES as readonly string[]).includes(v)) return null;
  bag.take(ATTR.failureType);
  return v as FailureType;
}

/** Validates one span and maps its attributes; `resource` and `scope` go to metadata. */
export function mapSpan(span: OtlpSpan, resource: Attributes, scope: { name: string; version: string }): MappedSpan {
  if (!isTraceHex(span.traceId)) return { ok: false, reason: 'invalid trace id (must be 16 bytes, not all zero)' };
  if (!isSpanHex(span.spanId)) return { ok: false, reason: 'invalid span id (must be 8 bytes, not all zero)' };
  const parent = span.parentSpanId;
  if (parent === null || (parent !== '' && !/^[0-9a-f]{16}$/.test(parent))) {
    return { ok: false, reason: 'invalid parent span id (must be empty or 8 bytes)' };
  }
  if (!span.name) return { ok: false, reason: 'span name is empty' };
  if (span.name.length > MAX_NAME) return { ok: false, reason: `span name is longer than ${MAX_NAME} characters` };
  if (span.startNs <= 0n) return { ok: false, reason: 'start time is missing' };
  if (span.endNs < span.startNs) return { ok: false, reason: 'end time is before start time' };
  if (span.endNs > MAX_NS) return { ok: false, reason: 'end time is after 2262-04-11' };
  const implausible = implausibleTime(span.startNs) ?? implausibleTime(span.endNs);
  if (implausible) return { ok: false, reason: `span time ${implausible}` };

  const bag = new AttributeBag(span.attributes);
  const type = spanType(bag);
  const model = bag.text(ATTR.model) ?? '';
  const events = fromEvents(span.events);
  const input = spanInput(bag, events);
  const output = spanOutput(bag, events);
  const error = spanError(bag, span);
  const explicitFailure = failureType(bag);
  const statusCode = bag.number(ATTR.statusCode, 0, 999, true);
  const errorType = bag.peek('error.type');
  const promptTokens = bag.number(ATTR.promptTokens, 0, MAX_TOKENS, true) ?? 0;
  const completionTokens = bag.number(ATTR.completionTokens, 0, MAX_TOKENS, true) ?? 0;
  const cost = bag.number(ATTR.cost, 0, 1_000_000, false);

  // Last: whatever no field took.

  const metadata: Record<string, unknown> = bag.rest();
  if (Object.keys(resource).length > 0) metadata[ATTR.meta.resource] = resource;
  if (scope.name) metadata[ATTR.meta.scope] = scope;
  if (span.kind > 1) metadata[ATTR.meta.kind] = KIND_NAMES[span.kind] ?? String(span.kind);
  if (span.traceState) metadata[ATTR.meta.traceState] = span.traceState;
  const otherEvents = span.events.filter((e) => !events.used.has(e));
  if (otherEvents.length > 0) {
    metadata[ATTR.meta.events] = otherEvents.map((e) => ({ name: e.name, time_unix_nano: e.timeNs.toString(), attributes: e.attributes }));
  }
  if (span.links.length > 0) {
    metadata[ATTR.meta.links] = span.links.map((l) => ({ trace_id: l.traceId, span_id: l.spanId, attributes: l.attributes }));
  }

  const traceHex = span.traceId;
  return {
    ok: true,
    traceHex,
    fields: {
      traceId: traceUuid(traceHex),
      spanId: spanUuid(span.spanId),
      parentSpanId: parent === '' || /^0+$/.test(parent) ? null : spanUuid(parent),
      name: span.name,
      type,
      input,
      output,
      model: model.slice(0, 200),
      startNs: span.startNs,
      endNs: span.endNs,
      promptTokens,
      completionTokens,
      cost,
      error,
      // `error.type` (e.g. "openai.RateLimitError") helps classification when the message is terse.
      failureType: explicitFailure ?? classifyFailure(null, statusCode, error && typeof errorType === 'string' ? `${error} (${errorType})` : error),
      statusCode,
      metadata,
      otelTraceId: traceHex,
      otelSpanId: span.spanId,
      embedding: [],
    },
  };
}
