-- Full-text search (GET /v1/traces?q=): one text index per table over the lowercased name, input,
-- output and error together, the exact expression the search queries test (traces/search.ts), so
-- hasAllTokens reads the index instead of the text. splitByNonAlpha splits on ASCII characters
-- that are not letters or digits and keeps every non-ASCII character inside its token, so words of
-- any script are tokens. docs/api-decisions.md (Full-text search) has the semantics.
ALTER TABLE spans {on_cluster} ADD INDEX IF NOT EXISTS idx_text lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))) TYPE text(tokenizer = splitByNonAlpha);
ALTER TABLE traces {on_cluster} ADD INDEX IF NOT EXISTS idx_text lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, ''))) TYPE text(tokenizer = splitByNonAlpha);
-- Parts written before this migration get the index by a background mutation. Until it finishes
-- the search still answers the same, reading and tokenizing the text of those parts instead.
ALTER TABLE spans {on_cluster} MATERIALIZE INDEX idx_text;
ALTER TABLE traces {on_cluster} MATERIALIZE INDEX idx_text
