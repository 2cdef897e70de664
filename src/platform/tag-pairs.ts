/**
 * A tag as one string in the `tag_pairs` columns of traces and spans: key and value joined by a
 * separator (tags may not contain control characters). Ingest writes them (ingest/rows.ts
 * tagPairs); trace filters and subject erasure match them (traces/filters.ts, traces/subject-repo.ts).
 */
export const TAG_PAIR_SEPARATOR = '\u001f';
export const tagPair = (key: string, value: string): string => `${key}${TAG_PAIR_SEPARATOR}${value}`;
