import { SEARCH_TEXT_MAX_LENGTH, textTokens } from '../../platform/text-tokens.js';
import { bind, type TenantWhere } from '../../stores/clickhouse-where.js';
import { atTraceKeys } from './trace-keys.js';
import type { TraceKeyPosition } from './types.js';

/** Bounds of `q` (GET /v1/traces, /v1/traces/export): characters, and distinct tokens. */
export const SEARCH_MAX_LENGTH = SEARCH_TEXT_MAX_LENGTH;
export const SEARCH_MAX_TOKENS = 10;

/** The distinct tokens of a query, split and lowercased as ingest stores the traces' tokens. */
export const searchTokens: (q: string) => string[] = textTokens;

/**
 * Most traces a token may narrow a search to: beyond it, the token is too common to list its
 * traces, and the listing reads newest first instead (its time slices find a page soon). Listing
 * them costs in proportion to their number, since each is its own granule of trace_tokens: on the
 * 100M-span bench dataset (10M traces) 300 took 21–31 ms, 1,000 43–49 ms and 10,000 190–230 ms,
 * where the newest-first read of a word in 10,000 traces took 60–90 ms.
 */
export const SEARCH_CANDIDATES_MAX = 300;

/**
 * What the token index told about a search before the listing reads traces: `candidates` holds
 * every trace that can match, at its place in the traces sorting key, and the tokens in `settled`
 * need no other check on them (the index found each in every candidate).
 */
export interface SearchNarrowing {
  candidates: readonly TraceKeyPosition[];
  settled: ReadonlySet<string>;
}

/**
 * Adds the search to a WHERE clause over `traces`: every token must appear in the text (name,
 * input, output, error) of the trace row or of one of its spans; different tokens may be in
 * different fields and spans. Each token is a semi-join on `trace_tokens`
 * (clickhouse/009_trace_tokens.sql) by the traces sorting key: the rows at a trace's current key
 * hold all its tokens, so the keys of the token rows holding it name the traces that match, and
 * the traces table reads only those keys' granules. The token rows read are those at the keys the
 * listing can keep: `keyBounds` puts the listing's project, time range and time slice on them (the
 * slice first: TraceFilter.where), or, with a `narrowing` (search-candidates.ts), the candidates'
 * keys; a narrowing's settled tokens add nothing.
 */
export function addSearch(where: TenantWhere, tokens: readonly string[], narrowing: SearchNarrowing | null, keyBounds: (rows: TenantWhere) => void): void {
  const keys = narrowing?.candidates;
  if (keys) where.and`id IN ${bind('Array(UUID)', keys.map((k) => k.id))}`;
  for (const token of tokens) {
    if (narrowing?.settled.has(token)) continue;
    const rows = where.sibling();
    if (keys) atTraceKeys(rows, keys, 'trace_id');
    else keyBounds(rows);
    rows.and`hasToken(tokens, ${bind('String', token)})`;
    where.and`(project_id, started_at, id) IN (SELECT project_id, started_at, trace_id FROM trace_tokens WHERE ${rows.piece})`;
  }
}
