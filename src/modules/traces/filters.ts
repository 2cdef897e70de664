import { createHash } from 'node:crypto';
import { badRequest } from '../../platform/errors.js';
import { ceilMillis, floorMillis, isoToNanos, millisToClickHouse } from '../../platform/time.js';
import { bind, TenantWhere } from '../../stores/clickhouse-where.js';
import { tagPair } from '../../platform/tag-pairs.js';
import { traceFilterShape, type TraceFilterQuery } from './schemas.js';
import { addSearch, searchTokens, type SearchNarrowing } from './search.js';
import type { Slice } from './time-slices.js';
import type { TraceKeyPosition } from './types.js';
import type { StartedAtRange, TenantTraceFilter } from './types.js';

/**
 * The filters of one trace listing, bound to its tenant. Queries get their WHERE clause only from
 * `where()`, which starts with the tenant, so a trace query cannot be written without it.
 */
export class TraceFilter implements TenantTraceFilter {
  private constructor(
    readonly tenantId: string,
    readonly range: StartedAtRange,
    private readonly conditions: readonly ((where: TenantWhere, slice?: Slice) => void)[],
    /** Stable digest of the filters, carried in cursors so a cursor only continues its own listing. */
    readonly fingerprint: string,
    /** Every trace that can match, at its place, when the search's token index named them (SEARCH_CANDIDATES_MAX at most); else null. */
    readonly candidates: readonly TraceKeyPosition[] | null,
    /**
     * Whether a candidate's place alone decides it (search-candidates.ts): every token of the
     * search is settled by the token index, and no filter is set but the project and the time range.
     */
    readonly placeDecides: boolean,
    readonly projectId: string | undefined,
  ) {}

  /**
   * Validates what the schema cannot express (tag_key and tag_value come together) and builds the
   * filter. `narrowing`: what the token index told about `q`, when asked (search-candidates.ts).
   */
  static fromQuery(tenantId: string, query: TraceFilterQuery, narrowing: SearchNarrowing | null = null): TraceFilter {
    if ((query.tag_key === undefined) !== (query.tag_value === undefined)) {
      throw badRequest('error.tags_filter_incomplete', 'tag_key and tag_value must be sent together', {
        details: [{ path: query.tag_key === undefined ? 'query.tag_key' : 'query.tag_value', message: 'required with its pair' }],
      });
    }
    const range: StartedAtRange = {
      // started_at has millisecond precision: the smallest ms >= from, the largest ms <= to.
      fromMs: query.from === undefined ? null : ceilMillis(isoToNanos(query.from)),
      toMs: query.to === undefined ? null : floorMillis(isoToNanos(query.to)),
    };
    const c: ((where: TenantWhere, slice?: Slice) => void)[] = [];
    const q = query;
    // The conditions on the sorting key's project_id and started_at, which trace_tokens shares.
    const keyBounds = (w: TenantWhere) => {
      if (q.project_id !== undefined) w.and`project_id = ${bind('UUID', q.project_id)}`;
      if (range.fromMs !== null) w.and`started_at >= ${bind("DateTime64(3, 'UTC')", millisToClickHouse(range.fromMs))}`;
      if (range.toMs !== null) w.and`started_at <= ${bind("DateTime64(3, 'UTC')", millisToClickHouse(range.toMs))}`;
    };
    c.push(keyBounds);
    if (q.failure_type !== undefined) c.push((w) => w.and`has(failure_types, ${bind('String', q.failure_type)})`);
    if (q.latency_min !== undefined) c.push((w) => w.and`latency_ms >= ${bind('UInt64', q.latency_min)}`);
    if (q.latency_max !== undefined) c.push((w) => w.and`latency_ms <= ${bind('UInt64', q.latency_max)}`);
    // A non-zero minimum excludes traces stored with total_token_count 0 by the comparison itself.
    if (q.token_count_min !== undefined) c.push((w) => w.and`total_token_count >= ${bind('UInt64', q.token_count_min)}`);
    if (q.token_count_max !== undefined) c.push((w) => w.and`total_token_count <= ${bind('UInt64', q.token_count_max)}`);
    if (q.tag_key !== undefined && q.tag_value !== undefined) {
      const pair = tagPair(q.tag_key, q.tag_value);
      c.push((w) => w.and`has(tag_pairs, ${bind('String', pair)})`);
    }
    if (q.name !== undefined) c.push((w) => w.and`name = ${bind('String', q.name)}`);
    if (q.session_id !== undefined) c.push((w) => w.and`session_id = ${bind('String', q.session_id)}`);
    if (q.model !== undefined) c.push((w) => w.and`model = ${bind('String', q.model)}`);
    const tokens = q.q === undefined ? [] : searchTokens(q.q);
    if (tokens.length > 0) c.push((w, slice) => addSearch(w, tokens, narrowing, (rows) => keyBounds(slice ? slice.bounds(rows) : rows)));
    const placeDecides =
      narrowing !== null &&
      tokens.every((token) => narrowing.settled.has(token)) &&
      (Object.keys(traceFilterShape) as (keyof TraceFilterQuery)[]).every((k) => PLACE_FILTERS.has(k) || q[k] === undefined);
    return new TraceFilter(tenantId, range, c, fingerprintOf(query), narrowing?.candidates ?? null, placeDecides, q.project_id);
  }

  /**
   * A fresh WHERE clause for one query: tenant first, then `slice` (a listing's time window and
   * keyset), then every filter. The search comes last: its semi-joins read only the token rows of
   * the traces the rest of the clause keeps (search.ts).
   */
  where(slice?: Slice): TenantWhere {
    const where = TenantWhere.forTenant(this.tenantId);
    slice?.apply(where);
    for (const apply of this.conditions) apply(where, slice);
    return where;
  }
}


/** Filters a trace's place in the sorting key (project_id, started_at) answers, besides the search itself. */
const PLACE_FILTERS: ReadonlySet<keyof TraceFilterQuery> = new Set(['q', 'project_id', 'from', 'to']);

/** Only the filter parameters count: a cursor stays valid when the page size changes. */
function fingerprintOf(query: TraceFilterQuery): string {
  const keys = (Object.keys(traceFilterShape) as (keyof TraceFilterQuery)[]).sort();
  const canonical = keys.filter((k) => query[k] !== undefined).map((k) => [k, query[k]]);
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url').slice(0, 12);
}
