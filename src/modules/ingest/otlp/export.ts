import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../../platform/cursor.js';
import { AppError } from '../../../platform/errors.js';
import { isoToNanos, nanosToClickHouse } from '../../../platform/time.js';
import { jsToAnyValue, jsToKeyValues } from './attributes.js';
import { spanHexOf, traceHexOf } from '../../../platform/otel-ids.js';
import type { ExportSpanRow, OtlpRepository } from './repo.js';
import type { ExportQuery, TracesData } from './schemas.js';
import { ATTR } from './semconv.js';

const DEFAULT_WINDOW_NS = 24n * 3_600n * 1_000_000_000n;
const MAX_NS = 9_223_372_036_854_775_807n;

// The cursor carries the whole query, so a next page needs nothing but the cursor.
const exportCursor = z.object({
  p: z.guid().nullable(),
  f: z.string().regex(/^\d{1,19}$/),
  t: z.string().regex(/^\d{1,19}$/),
  a: z.object({ p: z.guid(), t: z.guid(), s: z.guid() }),
});

type Span = TracesData['resourceSpans'][number]['scopeSpans'][number]['spans'][number];
type Scope = { name: string; version: string };
interface TraceHint {
  session_id: string;
  tags: string[];
  tag_map: Record<string, string>;
}

const badParameter = (name: string, message: string) =>
  new AppError(400, 'bad_request', `query.${name}: ${message}`, { details: [{ path: `query.${name}`, message }] });

function parseBound(name: string, iso: string): bigint {
  const ns = isoToNanos(iso);
  if (ns < 0n || ns > MAX_NS) throw badParameter(name, 'must lie between 1970 and 2262');
  return ns;
}

function parseMetadata(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Span fields as attributes, each under the first key that ingest reads for it (semconv.ts), so
 * that POSTing the export to /v1/otlp/traces reproduces the span. They win over metadata keys.
 */
function fieldAttributes(row: ExportSpanRow): Record<string, unknown> {
  const attrs: Record<string, unknown> = { [ATTR.type]: row.type };
  if (row.model) attrs[ATTR.model[0]] = row.model;
  if (row.input) attrs[ATTR.input[0]] = row.input;
  if (row.output) attrs[ATTR.output[0]] = row.output;
  if (Number(row.prompt_tokens) > 0) attrs[ATTR.promptTokens[0]] = Number(row.prompt_tokens);
  if (Number(row.completion_tokens) > 0) attrs[ATTR.completionTokens[0]] = Number(row.completion_tokens);
  attrs[ATTR.cost[0]] = row.cost; // always, or re-ingest would price a deliberate 0 from the price book
  if (row.error !== null) attrs[ATTR.error] = row.error;
  if (row.failure_type) attrs[ATTR.failureType] = row.failure_type;
  if (Number(row.status_code) > 0) attrs[ATTR.statusCode[0]] = Number(row.status_code);
  return attrs;
}

/** Session and tags live on the trace; a root span carries them unless its attributes already do. */
function traceAttributes(attrs: Record<string, unknown>, hint: TraceHint | undefined): void {
  if (!hint) return;
  if (hint.session_id && !ATTR.session.some((k) => k in attrs)) attrs[ATTR.session[0]] = hint.session_id;
  if (hint.tags.length > 0 && !ATTR.tags.some((k) => k in attrs)) attrs[ATTR.tags[1]] = hint.tags;
  if (Object.keys(hint.tag_map).length > 0 && !(ATTR.tagMap in attrs)) attrs[ATTR.tagMap] = hint.tag_map;
}

function toSpan(row: ExportSpanRow, metadata: Record<string, unknown>, hint: TraceHint | undefined): Span {
  const { [ATTR.meta.resource]: _resource, [ATTR.meta.scope]: _scope, ...rest } = metadata;
  const attrs = { ...rest, ...fieldAttributes(row) };
  if (row.parent_span_id === null) traceAttributes(attrs, hint);
  return {
    traceId: row.otel_trace_id || traceHexOf(row.trace_id),
    spanId: row.otel_span_id || spanHexOf(row.span_id),
    parentSpanId: row.parent_span_id ? spanHexOf(row.parent_span_id) : '',
    name: row.name,
    startTimeUnixNano: row.start_ns,
    endTimeUnixNano: row.end_ns,
    attributes: Object.entries(attrs).map(([key, value]) => ({ key, value: jsToAnyValue(value) })),
  };
}

function scopeOf(metadata: Record<string, unknown>): Scope {
  const s = metadata[ATTR.meta.scope] as Partial<Scope> | undefined;
  return { name: typeof s?.name === 'string' ? s.name : '', version: typeof s?.version === 'string' ? s.version : '' };
}

function resourceOf(metadata: Record<string, unknown>): Record<string, unknown> {
  const r = metadata[ATTR.meta.resource];
  return r && typeof r === 'object' && !Array.isArray(r) ? (r as Record<string, unknown>) : {};
}

/** Groups spans by (resource, scope) as they were received; native spans share the empty ones. */
function toTracesData(rows: readonly ExportSpanRow[], hints: ReadonlyMap<string, TraceHint>): TracesData {
  const resources = new Map<string, { resource: Record<string, unknown>; scopes: Map<string, { scope: Scope; spans: Span[] }> }>();
  for (const row of rows) {
    const metadata = parseMetadata(row.metadata);
    const resource = resourceOf(metadata);
    const scope = scopeOf(metadata);
    const resourceKey = JSON.stringify(resource);
    const scopeKey = JSON.stringify(scope);
    let group = resources.get(resourceKey);
    if (!group) resources.set(resourceKey, (group = { resource, scopes: new Map() }));
    let scoped = group.scopes.get(scopeKey);
    if (!scoped) group.scopes.set(scopeKey, (scoped = { scope, spans: [] }));
    scoped.spans.push(toSpan(row, metadata, hints.get(row.trace_id)));
  }
  return {
    resourceSpans: [...resources.values()].map((g) => ({
      resource: { attributes: jsToKeyValues(g.resource) },
      scopeSpans: [...g.scopes.values()].map((s) => ({ scope: s.scope, spans: s.spans, schemaUrl: '' })),
      schemaUrl: '',
    })),
  };
}

/** GET /v1/otlp/export: spans of the tenant as OTLP TracesData JSON, keyset-paged. */
export class OtlpExportService {
  constructor(private readonly repo: OtlpRepository) {}

  async page(tenantId: string, query: ExportQuery, now = Date.now()): Promise<{ data: TracesData; nextCursor: string | null }> {
    let projectId = query.project_id ?? null;
    let fromNs: bigint;
    let toNs: bigint;
    let after: { projectId: string; traceId: string; spanId: string } | undefined;
    if (query.cursor) {
      const c = decodeCursor(query.cursor, exportCursor);
      projectId = c.p;
      fromNs = BigInt(c.f);
      toNs = BigInt(c.t);
      after = { projectId: c.a.p, traceId: c.a.t, spanId: c.a.s };
    } else {
      toNs = query.to ? parseBound('to', query.to) : BigInt(now) * 1_000_000n;
      fromNs = query.from ? parseBound('from', query.from) : toNs - DEFAULT_WINDOW_NS;
      if (fromNs < 0n) fromNs = 0n;
      if (fromNs > toNs) throw badParameter('to', 'must not be before from');
    }
    const rows = await this.repo.exportSpans(tenantId, {
      projectId: projectId ?? undefined,
      from: nanosToClickHouse(fromNs),
      to: nanosToClickHouse(toNs),
      after,
      limit: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    const nextCursor =
      rows.length > query.limit && last
        ? encodeCursor({ p: projectId, f: fromNs.toString(), t: toNs.toString(), a: { p: last.project_id, t: last.trace_id, s: last.span_id } })
        : null;
    const rootTraces = [...new Set(page.filter((r) => r.parent_span_id === null).map((r) => r.trace_id))];
    const hints = new Map((await this.repo.traceHints(tenantId, rootTraces)).map((h) => [h.id, h]));
    return { data: toTracesData(page, hints), nextCursor };
  }
}
