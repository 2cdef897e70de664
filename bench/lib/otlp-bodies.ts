/**
 * OTLP/HTTP protobuf bodies (ExportTraceServiceRequest) carrying the same traces as the native
 * bodies of the same shape (bodies.ts `traceSpecs`): one resource, one scope, `shape.traces`
 * traces of `shape.spanTypes.length` spans each, span fields under the attribute keys ingest reads
 * (docs/ingest.md, "Attribute mapping").
 *
 * A few templates are encoded once with the project's own protobuf schema (src/.../otlp/proto.ts);
 * every request is then a copy of one with its ids and times overwritten in place (the byte offsets
 * of placeholder ids and times are found once), so building a body costs a memcpy and a few hundred
 * small writes, not a protobuf encode: the load generator must not be what limits the rate.
 *
 * Ids: trace id = run (4 bytes) · request index (4) · trace number in the request (2) · 6 fixed
 * bytes, so a listed trace's UUID says which request and trace it is without a lookup. Span id =
 * request index (4) · trace number (1) · span number (1) · run (2). Times: every trace of a request
 * starts at the `traceStartMs` given for that request; its spans keep the template's offsets.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { jsToKeyValues } from '../../src/modules/ingest/otlp/attributes.js';
import { ExportTraceServiceRequest } from '../../src/modules/ingest/otlp/proto.js';
import { traceSpecs, type BodyShape, type TraceSpec } from './bodies.js';

const TRACE_MARK = Buffer.from([0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8]); // → run · request index
const TRACE_TAIL = Buffer.from([0x0b, 0xe4, 0xc0, 0x07, 0x1a, 0xce]);
const SPAN_MARK = Buffer.from([0xe1, 0xe2, 0xe3, 0xe4]); // → request index
const TIME_MARK = 0x17e57e00000000; // + k: a unique fixed64 per time field, below 2^53
const NS_PER_MS = 1_000_000n;
const KIND_INTERNAL = 1;
const KIND_CLIENT = 3;
const STATUS_ERROR = 2;

export const RESOURCE = { 'service.name': 'bench-agent' };
export const SCOPE = { name: 'looptrace-bench', version: '1.0.0' };

interface Template {
  bytes: Buffer;
  traceOffsets: number[];
  spanOffsets: number[];
  /** Offsets of fixed64 times and their nanoseconds after the trace's start (below 2^53: plain numbers). */
  times: { offset: number; relNs: number }[];
}

function allOffsets(haystack: Buffer, needle: Buffer): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/** The OTLP span attributes of one span of `trace` (root spans carry the trace-level hints too). */
function spanAttributes(trace: TraceSpec, s: number): Record<string, unknown> {
  const span = trace.spans[s]!;
  const attrs: Record<string, unknown> = {
    'looptrace.span.type': span.type,
    'input.value': span.input,
    'output.value': span.output,
  };
  if (span.model) attrs['gen_ai.request.model'] = span.model;
  if (span.promptTokens !== undefined) attrs['gen_ai.usage.input_tokens'] = span.promptTokens;
  if (span.completionTokens !== undefined) attrs['gen_ai.usage.output_tokens'] = span.completionTokens;
  if (span.failureType) attrs['looptrace.failure_type'] = span.failureType;
  attrs['http.response.status_code'] = span.statusCode;
  if (span.parent === null) {
    attrs['session.id'] = trace.sessionId;
    attrs['looptrace.tags'] = trace.tags;
    attrs['looptrace.tag_map'] = trace.tagMap;
    attrs.user_id = trace.metadata.user_id;
  }
  return attrs;
}

function buildTemplate(seed: number, nowMs: number, shape: BodyShape, run: Buffer): Template {
  if (shape.traces > 255 || shape.spanTypes.length > 255) throw new Error('OTLP bench bodies hold at most 255 traces of at most 255 spans');
  const traces = traceSpecs(seed, nowMs, shape);
  const placeholders = new Map<number, bigint>(); // placeholder time → ns relative to the trace's start
  const time = (relMs: number) => {
    const value = TIME_MARK + placeholders.size;
    placeholders.set(value, BigInt(relMs) * NS_PER_MS);
    return value;
  };
  const traceId = (t: number) => Buffer.concat([TRACE_MARK, Buffer.from([t >> 8, t & 0xff]), TRACE_TAIL]);
  const spanId = (t: number, s: number) => Buffer.concat([SPAN_MARK, Buffer.from([t, s]), run.subarray(0, 2)]);
  const spans = traces.flatMap((trace, t) =>
    trace.spans.map((span, s) => ({
      traceId: traceId(t),
      spanId: spanId(t, s),
      parentSpanId: span.parent === null ? undefined : spanId(t, span.parent),
      name: span.name,
      kind: span.type === 'llm' ? KIND_CLIENT : KIND_INTERNAL,
      startTimeUnixNano: time(span.startMs - trace.startMs),
      endTimeUnixNano: time(span.endMs - trace.startMs),
      attributes: jsToKeyValues(spanAttributes(trace, s)),
      status: span.error ? { code: STATUS_ERROR, message: span.error } : {},
    })),
  );
  const request = {
    resourceSpans: [{ resource: { attributes: jsToKeyValues(RESOURCE) }, scopeSpans: [{ scope: SCOPE, spans }] }],
  };
  const bytes = Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(request)).finish());

  const spanCount = traces.reduce((n, t) => n + t.spans.length, 0);
  const parents = traces.reduce((n, t) => n + t.spans.filter((s) => s.parent !== null).length, 0);
  const traceOffsets = allOffsets(bytes, TRACE_MARK);
  const spanOffsets = allOffsets(bytes, SPAN_MARK);
  if (traceOffsets.length !== spanCount || spanOffsets.length !== spanCount + parents) {
    throw new Error(`OTLP template: found ${traceOffsets.length}/${spanOffsets.length} id placeholders, expected ${spanCount}/${spanCount + parents}`);
  }
  const times = [...placeholders].map(([value, relNs]) => {
    const needle = Buffer.alloc(8);
    needle.writeBigUInt64LE(BigInt(value));
    const found = allOffsets(bytes, needle);
    if (found.length !== 1) throw new Error(`OTLP template: time placeholder found ${found.length} times`);
    return { offset: found[0]!, relNs: Number(relNs) };
  });
  return { bytes, traceOffsets, spanOffsets, times };
}

export interface OtlpBodyFactory {
  /** Request `index`: unique ids, every trace starting at `traceStartMs` (integer ms), content of template `index % templates`. */
  body(index: number, traceStartMs: number): Buffer;
  /** The trace UUID the server stores trace `t` of request `index` under (the OTel id's 16 bytes). */
  traceUuid(index: number, t: number): string;
  /** Request index and trace number of a UUID of this factory's run, else undefined. */
  locate(uuid: string): { index: number; t: number } | undefined;
  tracesPerRequest: number;
  spansPerTrace: number;
  /** Average protobuf size before gzip. */
  bytesPerBody: number;
  gzip: boolean;
}

export function otlpBodyFactory(o: { templates: number; shape: BodyShape; gzip?: boolean; nowMs?: number }): OtlpBodyFactory {
  const run = randomBytes(4);
  run[0] = run[0]! | 0x80; // never all zero
  const runHex = run.toString('hex');
  const tail = TRACE_TAIL.toString('hex');
  const built = Array.from({ length: o.templates }, (_, i) => buildTemplate(i + 1, o.nowMs ?? Date.now(), o.shape, run));
  const prefix = Buffer.alloc(8);
  run.copy(prefix, 0);
  const factory: OtlpBodyFactory = {
    body(index, traceStartMs) {
      const tpl = built[index % built.length]!;
      const out = Buffer.from(tpl.bytes);
      prefix.writeUInt32BE(index >>> 0, 4);
      for (const at of tpl.traceOffsets) prefix.copy(out, at);
      for (const at of tpl.spanOffsets) out.writeUInt32BE(index >>> 0, at);
      // base + relNs as two 32-bit halves: number arithmetic, no BigInt per field.
      const base = BigInt(Math.round(traceStartMs)) * NS_PER_MS;
      const lo = Number(base & 0xffffffffn);
      const hi = Number(base >> 32n);
      for (const { offset, relNs } of tpl.times) {
        const low = lo + relNs;
        out.writeUInt32LE(low % 2 ** 32, offset);
        out.writeUInt32LE(hi + Math.floor(low / 2 ** 32), offset + 4);
      }
      return o.gzip ? gzipSync(out) : out;
    },
    traceUuid(index, t) {
      const hex = `${runHex}${(index >>> 0).toString(16).padStart(8, '0')}${t.toString(16).padStart(4, '0')}${tail}`;
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
    locate(uuid) {
      if (!uuid.startsWith(runHex) || !uuid.endsWith(tail)) return undefined;
      return { index: parseInt(uuid.slice(9, 13) + uuid.slice(14, 18), 16), t: parseInt(uuid.slice(19, 23), 16) };
    },
    tracesPerRequest: o.shape.traces,
    spansPerTrace: o.shape.spanTypes.length,
    bytesPerBody: Math.round(built.reduce((sum, b) => sum + b.bytes.length, 0) / built.length),
    gzip: o.gzip === true,
  };
  selfCheck(factory);
  return factory;
}

/** Decodes a few patched bodies with the project's schema: ids, parents and times must be what they claim. */
function selfCheck(f: OtlpBodyFactory): void {
  for (const index of [0, 1, 70_001, 0x7fff_ffff]) {
    const startMs = 1_790_000_000_000 + index;
    const raw = f.gzip ? gunzipSync(f.body(index, startMs)) : f.body(index, startMs);
    const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(raw), { longs: String, bytes: String }) as {
      resourceSpans: { scopeSpans: { spans: { traceId: string; spanId: string; parentSpanId?: string; startTimeUnixNano: string }[] }[] }[];
    };
    const spans = decoded.resourceSpans[0]!.scopeSpans[0]!.spans;
    if (spans.length !== f.tracesPerRequest * f.spansPerTrace) throw new Error('OTLP self-check: wrong span count');
    const spanIds = new Set<string>();
    spans.forEach((span, i) => {
      const t = Math.floor(i / f.spansPerTrace);
      const hex = Buffer.from(span.traceId, 'base64').toString('hex');
      const uuid = f.traceUuid(index, t);
      if (hex !== uuid.replaceAll('-', '')) throw new Error(`OTLP self-check: trace id ${hex} is not ${uuid}`);
      const located = f.locate(uuid);
      if (located?.index !== index || located.t !== t) throw new Error(`OTLP self-check: ${uuid} located as ${JSON.stringify(located)}`);
      const spanHex = Buffer.from(span.spanId, 'base64').toString('hex');
      if (spanHex.slice(0, 8) !== (index >>> 0).toString(16).padStart(8, '0')) throw new Error('OTLP self-check: span id not patched');
      spanIds.add(spanHex);
      if (i % f.spansPerTrace === 0 && BigInt(span.startTimeUnixNano) !== BigInt(startMs) * NS_PER_MS) {
        throw new Error(`OTLP self-check: root span starts at ${span.startTimeUnixNano}, not ${startMs} ms`);
      }
      if (span.parentSpanId && !spans.some((p) => p.spanId === span.parentSpanId)) throw new Error('OTLP self-check: dangling parent');
    });
    if (spanIds.size !== spans.length) throw new Error('OTLP self-check: span ids repeat within a request');
  }
}
