import { bind, type TenantWhere } from '../../stores/clickhouse-where.js';

/** Bounds of `q` (GET /v1/traces, /v1/traces/export): characters, and distinct tokens. */
export const SEARCH_MAX_LENGTH = 500;
export const SEARCH_MAX_TOKENS = 10;

// ClickHouse's splitByNonAlpha: a token is a run of ASCII letters, ASCII digits and non-ASCII characters.
const SEPARATORS = /[\u0000-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u007f]+/;

/** The distinct tokens of a query: split as the text index splits the text, lowercased as it is (lowerUTF8). */
export function searchTokens(q: string): string[] {
  return [...new Set(q.split(SEPARATORS).filter((t) => t.length > 0).map((t) => t.toLowerCase()))];
}

/** Most trace ids a token may narrow a search to: beyond it, the token is too common to list its traces. */
export const SEARCH_CANDIDATES_MAX = 10_000;

/**
 * What the text indexes told about a search before the listing reads traces: `candidates` holds
 * every trace that can match, and the tokens in `settled` need no other check on them (each was
 * found, by the index, in the trace's row or one of its spans).
 */
export interface SearchNarrowing {
  candidates: readonly string[];
  settled: ReadonlySet<string>;
}

/**
 * Adds the search to a WHERE clause over `traces`: every token must appear in the trace row's text
 * or in the text of one of its spans; different tokens may be in different fields and spans.
 *
 * The text of a row is `lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, '')))`,
 * exactly the expression of the `idx_text` text index of both tables (clickhouse/006_text_search.sql),
 * so `hasAllTokens` on it reads the index instead of the text: keep them the same. One condition
 * per token: the trace row's index, or a semi-join on the spans (FINAL: a re-sent span is matched
 * by its latest text) of the traces that the rest of the clause keeps (its other filters and the
 * listing's time slice, applied before the search: TraceFilter.where), and of the project when
 * the listing names one.
 *
 * With a `narrowing` (search-candidates.ts) the traces are read by id, its settled tokens add
 * nothing more, and the others' semi-joins read only the candidates' spans.
 */
export function addSearch(where: TenantWhere, tokens: readonly string[], projectId: string | undefined, narrowing: SearchNarrowing | null): void {
  const ids = narrowing === null ? null : bind('Array(UUID)', narrowing.candidates);
  const kept = where.piece;
  if (ids) where.and`id IN ${ids}`;
  for (const token of tokens) {
    if (narrowing?.settled.has(token)) continue;
    const word = bind('String', token);
    const spans = where.sibling();
    if (projectId !== undefined) spans.and`project_id = ${bind('UUID', projectId)}`;
    if (ids) spans.and`trace_id IN ${ids}`;
    else spans.and`trace_id IN (SELECT id FROM traces WHERE ${kept})`;
    spans.and`hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${word}])`;
    where.and`hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${word}])
      OR id IN (SELECT trace_id FROM spans FINAL WHERE ${spans.piece})`;
  }
}
