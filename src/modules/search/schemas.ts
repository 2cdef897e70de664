import { z } from 'zod';
import { isoDate } from '../../platform/schemas.js';

const MAX_DIMENSIONS = 4_096;
const LIMIT = { default: 10, min: 1, max: 100 } as const;
const THRESHOLD = { default: 0, min: -1, max: 1 } as const;

const limitDoc = `results at most; default ${LIMIT.default}, ${LIMIT.min} to ${LIMIT.max}`;
const thresholdDoc = `lowest cosine similarity returned, inclusive; default ${THRESHOLD.default} (nothing pointing away), ${THRESHOLD.min} to ${THRESHOLD.max}`;

const queryVector = z
  .array(z.number().min(-1e6).max(1e6))
  .min(1)
  .max(MAX_DIMENSIONS)
  .refine((v) => v.some((x) => x !== 0), { message: 'must not be all zeros (a zero vector has no direction)' })
  .describe(`the vector to search by: as many numbers as the project's vectors have (1 to ${MAX_DIMENSIONS})`);

export const searchBody = z
  .object({
    query_vector: queryVector,
    project_id: z.guid(),
    limit: z.number().int().min(LIMIT.min).max(LIMIT.max).default(LIMIT.default).describe(limitDoc),
    threshold: z.number().min(THRESHOLD.min).max(THRESHOLD.max).default(THRESHOLD.default).describe(thresholdDoc),
  })
  .describe('SpanSearchRequest');
export type SearchBody = z.infer<typeof searchBody>;

export const searchQuery = z.object({
  q: z.string().trim().min(1).max(8_000).describe("text to search by meaning; embedded with the tenant's embedding model"),
  project_id: z.guid(),
  limit: z.coerce.number().int().min(LIMIT.min).max(LIMIT.max).default(LIMIT.default).describe(limitDoc),
  threshold: z.coerce.number().min(THRESHOLD.min).max(THRESHOLD.max).default(THRESHOLD.default).describe(thresholdDoc),
});
export type SearchQuery = z.infer<typeof searchQuery>;

export const spanSearchResult = z
  .object({
    span_id: z.guid(),
    trace_id: z.guid(),
    similarity: z.number().describe('cosine similarity to the query, -1 to 1'),
    span_name: z.string(),
    span_type: z.string(),
    created_at: isoDate,
  })
  .describe('SpanSearchResult');
export type SpanSearchResult = z.infer<typeof spanSearchResult>;

export const searchResults = z
  .object({ results: z.array(spanSearchResult).describe('nearest first') })
  .describe('SpanSearchResults');

export const searchSettingsBody = z
  .object({ embed_spans: z.boolean().describe("embed this project's spans that arrive without a vector, server-side and asynchronously") })
  .describe('SearchSettingsUpdate');

export const searchSettings = z
  .object({
    project_id: z.guid(),
    embed_spans: z.boolean(),
    dimensions: z.number().int().nullable().describe("the project's vector dimension, fixed by its first vector; null before it"),
    embedded_until: isoDate
      .nullable()
      .describe("the embedder's cursor: created_at of the newest span embedded; set to now when embedding is turned on (spans stored while it was off are not embedded)"),
    last_error: z.string().nullable().describe('why the embedder last stopped short for this project; null when it did not'),
  })
  .describe('SearchSettings');
export type SearchSettings = z.infer<typeof searchSettings>;
