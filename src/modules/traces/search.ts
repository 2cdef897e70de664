import { SEARCH_TEXT_MAX_LENGTH, textTokens } from '../../platform/text-tokens.js';
import { millisToClickHouse } from '../../platform/time.js';
import { bind, type TenantWhere } from '../../stores/clickhouse-where.js';
import type { TraceKeyPosition } from './types.js';

/** Bounds of `q` (GET /v1/traces, /v1/traces/export): characters, and distinct tokens. */
export const SEARCH_MAX_LENGTH = SEARCH_TEXT_MAX_LENGTH;
export const SEARCH_MAX_TOKENS = 10;

/** The distinct tokens of a query, split and lowercased as ingest stores the traces' tokens. */
export function searchTokens(q: string): string[] {
  return textTokens(q);
}

/** Most traces a token may narrow a search to: beyond it, the token is too common to list its traces. */
export const SEARCH_CANDIDATES_MAX = 10_000;

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
 * (clickhouse/009_trace_tokens.sql), whose rows at a trace's key hold all the trace's tokens: so
 * it reads only the token rows at the keys of the traces the rest of the clause keeps (its other
 * filters and the listing's time slice, applied before the search: TraceFilter.where), or, with a
 * `narrowing` (search-candidates.ts), at the candidates' keys, and its settled tokens add nothing.
 */
export function addSearch(where: TenantWhere, tokens: readonly string[], narrowing: SearchNarrowing | null): void {
  const kept = where.piece;
  const keys = narrowing?.candidates;
  if (keys) where.and`id IN ${bind('Array(UUID)', keys.map((k) => k.id))}`;
  for (const token of tokens) {
    if (narrowing?.settled.has(token)) continue;
    const rows = where.sibling();
    if (keys) {
      rows.and`project_id IN ${bind('Array(UUID)', [...new Set(keys.map((k) => k.projectId))])}`;
      rows.and`started_at IN ${bind("Array(DateTime64(3, 'UTC'))", [...new Set(keys.map((k) => millisToClickHouse(k.startedAtMs)))])}`;
      rows.and`trace_id IN ${bind('Array(UUID)', keys.map((k) => k.id))}`;
    } else {
      rows.and`(project_id, started_at, trace_id) IN (SELECT project_id, started_at, id FROM traces WHERE ${kept})`;
    }
    rows.and`has(tokens, ${bind('String', token)})`;
    where.and`id IN (SELECT trace_id FROM trace_tokens WHERE ${rows.piece})`;
  }
}
