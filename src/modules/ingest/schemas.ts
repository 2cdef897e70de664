import { z } from 'zod';
import { uuidShaped } from '../../platform/ids.js';
import { FAILURE_TYPES } from './types.js';

/** Strings stay as sent; any other JSON value is stored JSON-encoded. */
const freeText = z.unknown().transform((v) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)));
const timestamp = z.iso.datetime({ offset: true });
const tokens = z.number().int().min(0).max(1_000_000_000);
const metadata = z.record(z.string().max(256), z.unknown());
const TAG_TEXT = /^[^\u0000-\u001f]+$/;

export const spanInput = z
  .object({
    id: uuidShaped().optional(),
    parent_span_id: uuidShaped().nullish(),
    name: z.string().min(1).max(1_000),
    type: z.string().min(1).max(64),
    input: freeText.optional(),
    output: freeText.optional(),
    model: z.string().max(200).nullish(),
    start_time: timestamp,
    end_time: timestamp,
    prompt_tokens: tokens.optional(),
    completion_tokens: tokens.optional(),
    cost: z.number().min(0).max(1_000_000).optional(),
    error: z.string().max(100_000).nullish(),
    failure_type: z.enum(FAILURE_TYPES).nullish(),
    status_code: z.number().int().min(0).max(999).nullish(),
    metadata: metadata.optional(),
    embedding: z.array(z.number().min(-1e6).max(1e6)).max(4_096).optional(),
  })
  .describe('IngestSpan');
export type SpanInput = z.infer<typeof spanInput>;

export const traceInput = z
  .object({
    id: uuidShaped().optional(),
    project_id: z.guid().optional(),
    name: z.string().min(1).max(1_000),
    input: freeText,
    output: freeText,
    session_id: z.string().min(1).max(256).optional(),
    external_id: z.string().min(1).max(256).optional(),
    tags: z.array(z.string().min(1).max(400).regex(TAG_TEXT, 'no control characters')).max(100).optional(),
    tag_map: z
      .record(z.string().min(1).max(200).regex(TAG_TEXT, 'no control characters'), z.string().min(1).max(200))
      .optional(),
    metadata: metadata.optional(),
    started_at: timestamp.optional(),
    ended_at: timestamp.optional(),
    error: z.string().max(100_000).nullish(),
    model: z.string().max(200).optional(),
    spans: z.array(spanInput).max(10_000),
  })
  .describe('IngestTrace');
export type TraceInput = z.infer<typeof traceInput>;

export const ingestResult = z.object({ id: z.guid(), span_count: z.number().int() }).describe('IngestResult');

export const MAX_BATCH_TRACES = 1_000;
export const batchBody = z.object({ traces: z.array(z.unknown()).min(1).max(MAX_BATCH_TRACES) });

export const batchItemResult = z.object({
  index: z.number().int(),
  id: z.string().nullable(),
  status: z.number().int(),
  code: z.string().optional(),
  error: z.string().optional(),
});
export const batchResult = z.object({ results: z.array(batchItemResult) }).describe('IngestBatchResult');
export type BatchItemResult = z.infer<typeof batchItemResult>;

/** A batch in which every item failed alike: the error body plus each item's result. */
export const batchFailure = z
  .object({ error: z.string(), code: z.string().optional(), request_id: z.string(), results: z.array(batchItemResult) })
  .describe('IngestBatchFailure');
