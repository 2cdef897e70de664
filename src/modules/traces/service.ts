import { notFound } from '../../platform/errors.js';
import { traceHexOf } from '../../platform/otel-ids.js';
import { TraceFilter } from './filters.js';
import { decodePosition, encodePosition } from './positions.js';
import type { LocatedTrace, TraceLocator } from './locator-repo.js';
import type { ReadFrom, SpanOutcome, TraceLocation, TraceRepository } from './repo.js';

export type { SpanOutcome } from './repo.js';
import type { Span, Trace, TraceDetail, TraceFilterQuery, TraceTree } from './schemas.js';
import { toSpan, toSpanSummary, toTrace, type StoredTrace } from './stored.js';
import { candidatesNewestFirst, narrowedBySearch } from './search-candidates.js';
import { readNewestFirst } from './time-slices.js';
import { aroundSpans, traceDetailChunks } from './detail-json.js';
import { spansJson, type SpansKind } from './span-json.js';
import type { ControlLoopDepthReader, TracePosition } from './types.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export { EXPORT_CONTENT_TYPES } from './export-service.js';
export { traceRetention } from './retention-service.js';
export type { SubjectTraceService, TraceRef, TraceSubject } from './subject-service.js';

/** An answer as JSON text in chunks, and what to call once it is sent or its connection is gone: its buffers may be reused after. */
export interface JsonText {
  chunks: Iterable<Buffer>;
  sent(): void;
}

const NOTHING_TO_RELEASE = () => {};

export interface TracePage {
  traces: Trace[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

export class TraceService {
  constructor(
    private readonly repo: TraceRepository,
    private readonly locator: TraceLocator,
    private readonly controlLoop: ControlLoopDepthReader,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The filters of a trace listing bound to the tenant (validated as GET /v1/traces validates
   * them), for other modules that read the traces table, such as sessions.
   */
  filter(tenantId: string, query: TraceFilterQuery): TraceFilter {
    return TraceFilter.fromQuery(tenantId, query);
  }

  /** Where the tenant's trace lives (project, started_at) and how it came in; undefined when the tenant has no such trace. */
  locate(tenantId: string, traceId: string): Promise<LocatedTrace | undefined> {
    return this.locator.locate(tenantId, traceId);
  }

  /** The project of each of `traceIds` the tenant has; the others are absent from the map. */
  projectsByTrace(tenantId: string, traceIds: readonly string[]): Promise<Map<string, string>> {
    return this.locator.projectsByTrace(tenantId, traceIds);
  }

  /** GET /v1/traces: newest first (started_at desc, id desc), keyset-paginated. */
  async list(tenantId: string, query: TraceFilterQuery, page: PageRequest): Promise<TracePage> {
    const filter = await narrowedBySearch(this.repo, tenantId, query);
    const after = page.cursor ? decodePosition(page.cursor, filter.fingerprint) : null;
    const rows = filter.candidates
      ? await candidatesNewestFirst(this.repo, filter, after, page.limit + 1)
      : await readNewestFirst(filter.range, after, page.limit + 1, this.now(), (slice, want) => this.repo.listSlice(filter, slice, want));
    return toTracePage(rows, page.limit, filter.fingerprint);
  }

  /**
   * GET /v1/traces/{id}: located through the registry; another tenant's id is simply not found.
   * `id` is the trace UUID (the route maps an OTel hex id to it).
   */
  get(tenantId: string, id: string): Promise<TraceDetail> {
    return this.withSpans(tenantId, id, (projectId, from) => this.repo.spans(tenantId, projectId, id, from), toSpan);
  }

  /**
   * GET /v1/traces/{id} as JSON text, in chunks: the text of `get` (detail-json.ts), made without
   * parsing the spans (span-json.ts) when that reproduces it, which is all but rare traces. Not
   * with a read replica: the raw read goes to the primary, and `get` reads the replica first.
   */
  detailJson(tenantId: string, id: string): Promise<JsonText> {
    return this.asText(tenantId, id, 'detail', () => this.get(tenantId, id));
  }

  /** GET /v1/traces/{id}/tree as JSON text: as detailJson, the text of `tree`. */
  treeJson(tenantId: string, id: string): Promise<JsonText> {
    return this.asText(tenantId, id, 'tree', () => this.tree(tenantId, id));
  }

  private async asText(tenantId: string, id: string, kind: SpansKind, parsed: () => Promise<TraceDetail | TraceTree>): Promise<JsonText> {
    const byParsing = async () => ({ chunks: traceDetailChunks(await parsed()), sent: NOTHING_TO_RELEASE });
    if (this.repo.readsFromReplica) return byParsing();
    const location = await this.locator.locate(tenantId, id);
    if (!location) throw notFound('trace');
    const depthRead = settledLater(this.controlLoop.depth(tenantId, id));
    const native = await this.repo.spansNativeFromPrimary(tenantId, location.projectId, id, kind);
    // The trace row is read by the registry's project, so its spans are that project's. The embedded
    // engine runs one parameter-bound query at a time, so the row is read after the spans: in the
    // engine's thread while this one makes their text, once its query has left this thread (one
    // turn of the event loop).
    const rowRead = settledLater(this.repo.find(tenantId, id, location));
    let spans;
    try {
      await new Promise(setImmediate);
      spans = spansJson(native.data, kind);
    } finally {
      native.release();
    }
    let row, depth;
    try {
      [row, depth] = await Promise.all([rowRead, depthRead]);
      if (!row) throw notFound('trace');
    } catch (err) {
      spans?.release();
      throw err;
    }
    return spans ? { chunks: aroundSpans(detailHead(row, location, depth), [spans.text]), sent: spans.release } : byParsing();
  }

  /** GET /v1/traces/{id}/tree: as `get`, each span without input, output and metadata (the lengths of input and output instead). */
  tree(tenantId: string, id: string): Promise<TraceTree> {
    return this.withSpans(tenantId, id, (projectId, from) => this.repo.spanSummaries(tenantId, projectId, id, from), toSpanSummary);
  }

  /** GET /v1/traces/{id}/spans/{span_id}: one span of the tenant's trace, as the detail shows it. */
  async span(tenantId: string, traceId: string, spanId: string): Promise<Span> {
    const location = await this.locator.locate(tenantId, traceId);
    if (!location) throw notFound('trace');
    // As `stored`: the registry has the trace, so a replica that lacks it or the span may lag the primary.
    const read = async (from: ReadFrom) => {
      const [row, span] = await Promise.all([this.repo.find(tenantId, traceId, location, from), this.repo.span(tenantId, location.projectId, traceId, spanId, from)]);
      return row ? span : undefined;
    };
    const found = (await read('replica')) ?? (this.repo.readsFromReplica ? await read('primary') : undefined);
    if (!found) throw notFound('span');
    return toSpan(found);
  }

  private async withSpans<Row, ApiSpan>(
    tenantId: string,
    id: string,
    readSpans: (projectId: string, from: ReadFrom) => Promise<Row[]>,
    toApiSpan: (row: Row) => ApiSpan,
  ) {
    const location = await this.locator.locate(tenantId, id);
    if (!location) throw notFound('trace');
    const [found, depth] = await Promise.all([this.stored(tenantId, id, location, readSpans), this.controlLoop.depth(tenantId, id)]);
    if (!found) throw notFound('trace');
    return { ...detailHead(found.row, location, depth), spans: found.spans.map(toApiSpan) };
  }

  /**
   * A located trace's row and spans. With a read replica (CLICKHOUSE_READ_URL) they are read there
   * first; the registry has already said the trace exists, so a replica that lacks its row, or
   * holds fewer spans than the row counts (the spans and traces tables replicate independently),
   * has not caught up, and the primary, which has every acknowledged write, answers instead. So a
   * trace is readable by id as soon as its ingest is acknowledged, replicas or not.
   */
  private async stored<Row>(
    tenantId: string,
    id: string,
    location: TraceLocation,
    readSpans: (projectId: string, from: ReadFrom) => Promise<Row[]>,
  ): Promise<{ row: StoredTrace; spans: Row[] } | undefined> {
    const read = async (from: ReadFrom) => {
      const row = await this.repo.find(tenantId, id, location, from);
      return row ? { row, spans: await readSpans(row.project_id, from) } : undefined;
    };
    const fromReplica = await read('replica');
    if (!this.repo.readsFromReplica) return fromReplica;
    if (fromReplica && fromReplica.spans.length >= Number(fromReplica.row.span_count)) return fromReplica;
    return (await read('primary')) ?? fromReplica;
  }

  /** The project of a stored trace, from the registry alone (no ClickHouse read); 404 when the tenant has no such trace. */
  async projectOf(tenantId: string, id: string): Promise<string> {
    const location = await this.locator.locate(tenantId, id);
    if (!location) throw notFound('trace');
    return location.projectId;
  }

  /** Many traces at once, without their spans (a batch of evaluations); unknown ids are absent from the map. */
  async findMany(tenantId: string, ids: readonly string[]): Promise<Map<string, Trace>> {
    if (ids.length === 0) return new Map();
    const projects = [...new Set((await this.locator.projectsByTrace(tenantId, ids)).values())];
    if (projects.length === 0) return new Map();
    const rows = await this.repo.findMany(tenantId, projects, ids);
    return new Map(rows.map((row) => [row.id, toTrace(row)]));
  }

  /** How every span of these traces went (status, error, failure type, latency), for failure rules. */
  async spanOutcomes(tenantId: string, projectIds: readonly string[], traceIds: readonly string[]): Promise<SpanOutcome[]> {
    if (traceIds.length === 0) return [];
    return this.repo.spanOutcomes(tenantId, projectIds, traceIds);
  }

  /** Which of `ids` (traces of this tenant) match the trace-list filter `query`. */
  async matching(tenantId: string, query: TraceFilterQuery, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    return new Set(await this.repo.matchingIds(TraceFilter.fromQuery(tenantId, query), ids));
  }

  /**
   * Traces of one session, oldest first (the session detail view). The caller owns the cursor: a
   * session page's position travels with the session's own time window.
   */
  async sessionTraces(
    tenantId: string,
    query: TraceFilterQuery & { session_id: string },
    after: TracePosition | null,
    limit: number,
  ): Promise<{ traces: Trace[]; has_more: boolean; last: TracePosition | null }> {
    const rows = await this.repo.sessionSlice(TraceFilter.fromQuery(tenantId, query), after, limit + 1);
    const hasMore = rows.length > limit;
    const items = hasMore ? rows.slice(0, limit) : rows;
    const last = items[items.length - 1];
    return { traces: items.map(toTrace), has_more: hasMore, last: last ? { startedAt: last.started_at, id: last.id } : null };
  }
}

/** A trace read by id without its spans. The registry row says whether it came over OTLP; its OTel id is then the UUID's own 16 bytes. */
function detailHead(row: StoredTrace, location: LocatedTrace, depth: number): Omit<TraceDetail, 'spans'> {
  return { ...toTrace(row), otel_trace_id: location.source === 'otlp' ? traceHexOf(row.id) : null, control_loop_depth: depth };
}

function toTracePage(rows: StoredTrace[], limit: number, fingerprint: string): TracePage {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return {
    traces: items.map(toTrace),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodePosition({ startedAt: last.started_at, id: last.id }, fingerprint) : null,
  };
}

/** The promise, marked as handled: it is awaited later, and a failure before then is not unhandled. */
function settledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}
