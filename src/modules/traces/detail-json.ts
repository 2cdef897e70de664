import type { TraceDetail } from './schemas.js';

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
 */
export function traceDetailJson(detail: TraceDetail): string {
  if (!hasOwnProto(detail.metadata) && !detail.spans.some((s) => hasOwnProto(s.metadata))) return JSON.stringify(detail);
  return JSON.stringify({
    ...detail,
    metadata: withoutProto(detail.metadata),
    spans: detail.spans.map((s) => ({ ...s, metadata: withoutProto(s.metadata) })),
  });
}

const hasOwnProto = (record: Record<string, unknown>): boolean => Object.hasOwn(record, '__proto__');

function withoutProto(record: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) if (k !== '__proto__') copy[k] = v;
  return copy;
}
