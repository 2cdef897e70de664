import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import type { TraceFilter } from './filters.js';
import { JSON_NUMBERS } from '../../stores/clickhouse.js';
import { SPAN_SELECT_COLUMNS, SPAN_SUMMARY_SELECT_COLUMNS, TRACE_SELECT_COLUMNS, type StoredSpan, type StoredSpanSummary, type StoredTrace } from './stored.js';
import { afterPosition, type Slice } from './time-slices.js';
import type { TracePosition } from './types.js';
import { SPAN_JSON_SELECT_COLUMNS, type SpansKind } from './span-json.js';
import { scannableSpare } from './text-scan.js';
import type { ReleasableBytes } from '../../stores/reused-buffer.js';
import type { TraceKeyPosition } from './types.js';
import { atTraceKeys } from './trace-keys.js';

const DATETIME = "DateTime64(3, 'UTC')";

/** Where the trace registry says a trace lives: its primary-key prefix in `traces`. */
export interface TraceLocation {
  projectId: string;
  /** ClickHouse DateTime64(3) literal. */
  startedAt: string;
}

/** How one span went: what failure rules match on. */
export interface SpanOutcome {
  trace_id: string;
  project_id: string;
  name: string;
  model: string;
  latency_ms: number;
  /** 0 when the span carried none. */
  status_code: number;
  /** '' when the span has no classified failure type. */
  failure_type: string;
  error: string | null;
  start_ms: number;
}

/** Keys of an exported trace, enough to page through an export. */
export interface TraceKey {
  id: string;
  project_id: string;
  span_count: number;
}

/** Which server a read goes to (CLICKHOUSE_READ_URL): the read URL, or the primary, which has every acknowledged write. */
export type ReadFrom = 'replica' | 'primary';

/**
 * Named ClickHouse queries over `traces` and `spans`. Rows are ReplacingMergeTree versions; every
 * read uses FINAL (the latest version of each sorting key) or picks the highest version itself, so
 * no response shows a duplicate or superseded trace or span.
 *
 * Listings, sessions and exports read the read URL (a replica may lag); the reads of workers that
 * act on freshly ingested traces (findMany, spanOutcomes, matchingIds) read the primary, and a
 * single trace's reads take `from` (TraceService.get falls back to the primary).
 */
export function traceRepository(ch: ClickHouseStore) {
  const settings = (name: string, tenantId: string) => ({ ...queryTag(name, tenantId), ...JSON_NUMBERS });
  const read = <T>(from: ReadFrom, name: string, query: string, params: Record<string, unknown>, tenantId: string) =>
    from === 'primary' ? ch.rowsFromPrimary<T>(name, query, params, settings(name, tenantId)) : ch.rows<T>(name, query, params, settings(name, tenantId));
  // Each column of the key on its own: ClickHouse prunes granules by every IN over a key column.
  const spansOf = (tenantId: string, projectId: string, traceId: string) =>
    TenantWhere.forTenant(tenantId).and`project_id = ${bind('UUID', projectId)}`.and`trace_id = ${bind('UUID', traceId)}`;
  const readSpans = <T>(from: ReadFrom, name: string, columns: string, tenantId: string, where: TenantWhere) =>
    read<T>(from, name, `SELECT ${columns} FROM spans FINAL WHERE ${where.sql} ORDER BY start_time, span_id`, where.params, tenantId);

  return {
    /** Whether the default reads go to another server than writes (a replica that may lag). */
    readsFromReplica: ch.readsFromReplica,

    /** One time slice of a listing, newest first. See time-slices.ts for why listings read in slices. */
    async listSlice(filter: TraceFilter, slice: Slice, limit: number): Promise<StoredTrace[]> {
      const where = filter.where(slice);
      const max = where.fragment`${bind('UInt32', limit)}`;
      return ch.rows<StoredTrace>(
        'traces.list',
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY started_at DESC, id DESC LIMIT ${max}`,
        where.params,
        settings('traces.list', filter.tenantId),
      );
    },

    /**
     * Of the traces at `keys` (a search's candidates), those the filter keeps after `after`, newest
     * first, at most `limit`: their ids only. The exact sorting keys make ClickHouse read only the
     * granules that hold them, and only the columns the filter needs.
     */
    async keysMatching(filter: TraceFilter, keys: readonly TraceKeyPosition[], after: TracePosition | null, limit: number): Promise<string[]> {
      const where = atTraceKeys(filter.where(), keys);
      if (after) afterPosition(where, after);
      const max = where.fragment`${bind('UInt32', limit)}`;
      const rows = await ch.rows<{ id: string }>(
        'traces.keys_matching',
        `SELECT id FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY started_at DESC, id DESC LIMIT ${max}`,
        where.params,
        settings('traces.keys_matching', filter.tenantId),
      );
      return rows.map((r) => r.id);
    },

    /** The traces at `keys` after `after`, newest first, at most `limit`: the rows of a page whose keys are known. */
    async atKeys(tenantId: string, keys: readonly TraceKeyPosition[], after: TracePosition | null, limit: number): Promise<StoredTrace[]> {
      if (keys.length === 0) return [];
      const where = atTraceKeys(TenantWhere.forTenant(tenantId), keys);
      if (after) afterPosition(where, after);
      const max = where.fragment`${bind('UInt32', limit)}`;
      return ch.rows<StoredTrace>(
        'traces.at_keys',
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY started_at DESC, id DESC LIMIT ${max}`,
        where.params,
        settings('traces.at_keys', tenantId),
      );
    },

    /**
     * Keys of the traces an export covers, in ClickHouse's order of `id`, after `afterId`. The export
     * walks spans in the same order, so its pages read disjoint, ascending ranges of the spans
     * sorting key (tenant, project, trace_id) instead of scattered ones (see export.ts).
     */
    async exportKeys(filter: TraceFilter, afterId: string | null, limit: number): Promise<TraceKey[]> {
      const where = filter.where();
      if (afterId) where.and`id > ${bind('UUID', afterId)}`;
      const max = where.fragment`${bind('UInt32', limit)}`;
      return ch.rows<TraceKey>(
        'traces.export_keys',
        `SELECT id, project_id, span_count FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY id LIMIT ${max}`,
        where.params,
        settings('traces.export_keys', filter.tenantId),
      );
    },

    /**
     * One trace at the location the registry gave. The exact sorting key makes this a point read;
     * should a later write have moved started_at, the project prefix and the id's bloom index still
     * find it, and the highest version wins.
     */
    async find(tenantId: string, id: string, location: TraceLocation, from: ReadFrom = 'replica'): Promise<StoredTrace | undefined> {
      const byKey = TenantWhere.forTenant(tenantId)
        .and`project_id = ${bind('UUID', location.projectId)}`
        .and`started_at = ${bind(DATETIME, location.startedAt)}`
        .and`id = ${bind('UUID', id)}`;
      const sql = (where: TenantWhere) =>
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY version DESC LIMIT 1`;
      const [exact] = await read<StoredTrace>(from, 'traces.get', sql(byKey), byKey.params, tenantId);
      if (exact) return exact;
      const byProject = TenantWhere.forTenant(tenantId)
        .and`project_id = ${bind('UUID', location.projectId)}`
        .and`id = ${bind('UUID', id)}`;
      const [moved] = await read<StoredTrace>(from, 'traces.get_moved', sql(byProject), byProject.params, tenantId);
      return moved;
    },

    /**
     * Traces by id within the given projects (the registry names them), latest version of each.
     * From the primary: evaluations read traces right after their ingest.
     */
    async findMany(tenantId: string, projectIds: readonly string[], ids: readonly string[]): Promise<StoredTrace[]> {
      const where = TenantWhere.forTenant(tenantId)
        .and`project_id IN ${bind('Array(UUID)', projectIds)}`
        .and`id IN ${bind('Array(UUID)', ids)}`;
      return ch.rowsFromPrimary<StoredTrace>(
        'traces.get_many',
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY id, version DESC LIMIT 1 BY id`,
        where.params,
        settings('traces.get_many', tenantId),
      );
    },

    /**
     * The columns that describe how each span of many traces went (failure detection): one read on
     * the (tenant, project, trace) prefix of the spans sorting key; FINAL collapses OTLP re-sends.
     * From the primary: the detector takes its traces from an outbox as soon as they are stored.
     */
    async spanOutcomes(tenantId: string, projectIds: readonly string[], traceIds: readonly string[]): Promise<SpanOutcome[]> {
      const where = TenantWhere.forTenant(tenantId)
        .and`project_id IN ${bind('Array(UUID)', projectIds)}`
        .and`trace_id IN ${bind('Array(UUID)', traceIds)}`;
      return ch.rowsFromPrimary<SpanOutcome>(
        'traces.span_outcomes',
        `SELECT trace_id, project_id, name, model, latency_ms, status_code,
           failure_type, error, toUnixTimestamp64Milli(start_time) AS start_ms
         FROM spans FINAL WHERE ${where.sql}`,
        where.params,
        settings('traces.span_outcomes', tenantId),
      );
    },

    /**
     * Where the tenant's traces whose text holds `token` are, or more than `max` of them when there
     * are too many to list (the query stops at max + 1). From trace_tokens
     * (clickhouse/009_trace_tokens.sql): a trace is at the key of its newest token row holding the
     * token, which is its current key, since the rows there hold all its tokens.
     */
    async tokenPositions(tenantId: string, projectId: string | undefined, token: string, max: number): Promise<TraceKeyPosition[]> {
      const where = TenantWhere.forTenant(tenantId);
      if (projectId !== undefined) where.and`project_id = ${bind('UUID', projectId)}`;
      where.and`hasToken(tokens, ${bind('String', token)})`;
      // Aliases unlike the columns: WHERE names the column project_id.
      const rows = await ch.rows<{ id: string; project: string; ms: number }>(
        'traces.token_positions',
        `SELECT trace_id AS id, any(project_id) AS project, toUnixTimestamp64Milli(argMax(started_at, version)) AS ms
         FROM trace_tokens WHERE ${where.sql} GROUP BY trace_id`,
        where.params,
        { ...settings('traces.token_positions', tenantId), max_rows_to_group_by: String(max + 1), group_by_overflow_mode: 'break' },
      );
      return rows.map((r) => ({ id: r.id, projectId: r.project, startedAtMs: Number(r.ms) }));
    },

    /** Which of `ids` match the filter (an eval rule choosing among newly stored traces; from the primary, which has them all). */
    async matchingIds(filter: TraceFilter, ids: readonly string[]): Promise<string[]> {
      const where = filter.where().and`id IN ${bind('Array(UUID)', ids)}`;
      const rows = await ch.rowsFromPrimary<{ id: string }>(
        'traces.matching',
        `SELECT DISTINCT id FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0`,
        where.params,
        settings('traces.matching', filter.tenantId),
      );
      return rows.map((r) => r.id);
    },

    /** A trace's spans in start order; (tenant, project, trace) is the prefix of the spans sorting key. */
    spans(tenantId: string, projectId: string, traceId: string, from: ReadFrom = 'replica'): Promise<StoredSpan[]> {
      return readSpans<StoredSpan>(from, 'traces.spans', SPAN_SELECT_COLUMNS, tenantId, spansOf(tenantId, projectId, traceId));
    },

    /** As `spans`, without their input, output and metadata (only the lengths of input and output): a span tree. */
    spanSummaries(tenantId: string, projectId: string, traceId: string, from: ReadFrom = 'replica'): Promise<StoredSpanSummary[]> {
      return readSpans<StoredSpanSummary>(from, 'traces.span_tree', SPAN_SUMMARY_SELECT_COLUMNS, tenantId, spansOf(tenantId, projectId, traceId));
    },

    /**
     * `spans` as the Native answer of SPAN_JSON_SELECT_COLUMNS, in no particular order, for
     * span-json.ts to make the text of the detail's or the tree's spans of; release it once read.
     * From the primary: the store answers raw formats only there. In buffers text-scan.ts can scan.
     */
    spansNativeFromPrimary(tenantId: string, projectId: string, traceId: string, kind: SpansKind = 'detail'): Promise<ReleasableBytes> {
      const where = spansOf(tenantId, projectId, traceId);
      const name = kind === 'detail' ? 'traces.spans_json' : 'traces.span_tree_json';
      const select = `SELECT ${SPAN_JSON_SELECT_COLUMNS[kind]} FROM spans FINAL WHERE ${where.sql}`;
      return ch.rawFromPrimary(name, select, 'Native', where.params, queryTag(name, tenantId), scannableSpare);
    },

    /** One span of a trace: a point read on the whole spans sorting key. */
    async span(tenantId: string, projectId: string, traceId: string, spanId: string, from: ReadFrom = 'replica'): Promise<StoredSpan | undefined> {
      const [found] = await readSpans<StoredSpan>(from, 'traces.span', SPAN_SELECT_COLUMNS, tenantId, spansOf(tenantId, projectId, traceId).and`span_id = ${bind('UUID', spanId)}`);
      return found;
    },

    /**
     * Traces of one session, oldest first after `after`. Ascending is the direction in which
     * ClickHouse reads FINAL in sorting-key order, so no time slicing is needed here.
     */
    async sessionSlice(filter: TraceFilter, after: TracePosition | null, limit: number): Promise<StoredTrace[]> {
      const where = filter.where();
      if (after) {
        where.and`started_at > ${bind(DATETIME, after.startedAt)} OR (started_at = ${bind(DATETIME, after.startedAt)} AND id > ${bind('UUID', after.id)})`;
      }
      const max = where.fragment`${bind('UInt32', limit)}`;
      return ch.rows<StoredTrace>(
        'sessions.traces',
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY started_at, id LIMIT ${max}`,
        where.params,
        settings('sessions.traces', filter.tenantId),
      );
    },
  };
}

export type TraceRepository = ReturnType<typeof traceRepository>;
