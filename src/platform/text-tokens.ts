/**
 * Words as full-text search matches them (GET /v1/traces?q=, docs/api-decisions.md "Full-text
 * search"): runs of ASCII letters, ASCII digits and non-ASCII characters, as ClickHouse's
 * splitByNonAlpha splits them, lowercased. Ingest stores each trace's distinct tokens with this
 * (the trace_tokens table, clickhouse/009_trace_tokens.sql) and the search splits its query with
 * it; SQL that tokenizes stored text (the same migration) uses splitByNonAlpha(lowerUTF8(…)),
 * which agrees with it but for a few non-ASCII case mappings (lowerUTF8 maps code point by code
 * point, String#toLowerCase by Unicode's full rules: 'İ', for one).
 */

/** The longest query a search takes, in characters: a longer token can never be asked for, so none is stored. */
export const SEARCH_TEXT_MAX_LENGTH = 500;

// Every ASCII character that is not a letter or a digit.
const SEPARATORS = /[\u0000-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u007f]+/;

/** Adds the tokens of `text` to `into` (a set of the distinct tokens of several texts). */
export function addTextTokens(into: Set<string>, text: string): void {
  for (const token of text.toLowerCase().split(SEPARATORS)) {
    if (token.length > 0 && token.length <= SEARCH_TEXT_MAX_LENGTH) into.add(token);
  }
}

/** The distinct tokens of `text`, in order of first appearance. */
export function textTokens(text: string): string[] {
  const tokens = new Set<string>();
  addTextTokens(tokens, text);
  return [...tokens];
}
