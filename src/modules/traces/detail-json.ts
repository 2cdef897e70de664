import type { TraceDetail, TraceTree } from './schemas.js';
import { metadataObject } from './stored.js';

/**
 * GET /v1/traces/{id} as JSON text, the same bytes the route's zod serializer produced
 * (`JSON.stringify` of `traceDetail` encoding the detail) without its cost: for a trace of 10,000
 * spans the schema walk copied every span and every field before stringifying (about a quarter of
 * the request's CPU). The detail is built by toTrace, toSpan and TraceService.get with exactly the
 * schema's keys in the schema's order, and its values are what the schema passes through, so
 * stringifying it directly gives the same text; test/traces/detail-json.test.ts holds the two
 * outputs equal byte for byte.
 *
 * The one thing the schema does to such data that JSON.stringify does not: a record (metadata, of
 * the trace and of each span) drops an own "__proto__" key at its top level. Dropped here too.
 *
 * GET /v1/traces/{id}/tree (TraceService.tree, toSpanSummary) is made the same way.
 */
export function traceDetailJson(detail: TraceDetail | TraceTree): string {
  return Buffer.concat([...traceDetailChunks(detail)]).toString('utf8');
}

/** Spans per chunk of traceDetailChunks: a few hundred kilobytes of text for spans of bench size. */
const SPANS_PER_CHUNK = 250;

/**
 * traceDetailJson's text in UTF-8 chunks of SPANS_PER_CHUNK spans, for a streamed response: the
 * client receives the first spans while the rest are still being written, and no one string of
 * the whole text (tens of megabytes for a big trace) is built. JSON.stringify writes an array as
 * `[` + its elements joined by `,` + `]`, so the chunks joined are the same bytes.
 */
export function* traceDetailChunks(detail: TraceDetail | TraceTree): Generator<Buffer> {
  const { spans, ...head } = detail;
  yield* aroundSpans(head, spanChunks(spans));
}

function* spanChunks(spans: readonly (TraceDetail | TraceTree)['spans'][number][]): Generator<Buffer> {
  for (let from = 0; from < spans.length; from += SPANS_PER_CHUNK) {
    const parts: string[] = [];
    for (const span of spans.slice(from, from + SPANS_PER_CHUNK)) {
      const metadata = 'metadata' in span ? span.metadata : undefined;
      parts.push(JSON.stringify(metadata && hasOwnProto(metadata) ? { ...span, metadata: withoutProto(metadata) } : span));
    }
    yield Buffer.from(parts.join(','), 'utf8');
  }
}

/**
 * The text of a trace read by id around the text of its spans, given as chunks of spans joined by
 * commas: the trace's fields, then `"spans":[`, the chunks joined by commas, `]}`.
 */
export function* aroundSpans(head: Omit<TraceDetail, 'spans'>, spanChunks: Iterable<Buffer>): Generator<Buffer> {
  const text = JSON.stringify({ ...head, metadata: withoutProtoIfAny(head.metadata), spans: [] });
  if (!text.endsWith(EMPTY_SPANS)) throw new Error('trace detail text: spans are not the last field');
  yield Buffer.from(`${text.slice(0, -EMPTY_SPANS.length)}"spans":[`, 'utf8');
  let first = true;
  for (const chunk of spanChunks) {
    if (!first) yield COMMA;
    yield chunk;
    first = false;
  }
  yield END;
}

/** A span's metadata as its JSON text in the detail, from the stored text (toSpan's metadataObject, stringified). */
export const metadataJson = (stored: string): string => JSON.stringify(withoutProtoIfAny(metadataObject(stored)));

const COMMA = Buffer.from(',');
const END = Buffer.from(']}');
const EMPTY_SPANS = '"spans":[]}';

const hasOwnProto = (record: Record<string, unknown>): boolean => Object.hasOwn(record, '__proto__');

const withoutProtoIfAny = (record: Record<string, unknown>): Record<string, unknown> => (hasOwnProto(record) ? withoutProto(record) : record);

function withoutProto(record: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) if (k !== '__proto__') copy[k] = v;
  return copy;
}
