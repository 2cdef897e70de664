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

/**
 * Adds the search to a WHERE clause over `traces`: every token must appear in the trace row's text
 * or in the text of one of its spans; different tokens may be in different fields and spans.
 *
 * The text of a row is `lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, '')))`,
 * exactly the expression of the `idx_text` text index of both tables (clickhouse/006_text_search.sql),
 * so `hasAllTokens` on it reads the index instead of the text: keep them the same. One condition
 * per token: the trace row's index, or a semi-join on the spans of the tenant (and of the project,
 * when the listing names one) that the spans' index answers. FINAL: a re-sent span is matched by
 * its latest text only.
 */
export function addSearch(where: TenantWhere, tokens: readonly string[], projectId: string | undefined): void {
  for (const token of tokens) {
    if (projectId === undefined) {
      where.and`hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${bind('String', token)}])
        OR id IN (SELECT trace_id FROM spans FINAL WHERE tenant_id = {tenant:UUID}
          AND hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${bind('String', token)}]))`;
    } else {
      where.and`hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${bind('String', token)}])
        OR id IN (SELECT trace_id FROM spans FINAL WHERE tenant_id = {tenant:UUID} AND project_id = ${bind('UUID', projectId)}
          AND hasAllTokens(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))), [${bind('String', token)}]))`;
    }
  }
}
