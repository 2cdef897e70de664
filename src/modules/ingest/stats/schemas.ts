import { z } from 'zod';
import { isoDate } from '../../../platform/schemas.js';
import { REFUSAL_REASONS, type RefusalReason } from './types.js';

export const MAX_RANGE_MINUTES = 1_440;
export const DEFAULT_RANGE_MINUTES = 60;
export const MAX_LIMIT = 1_000;

const dateTime = z.iso.datetime({ offset: true });

export const ingestStatsQuery = z.object({
  project_id: z.guid().optional().describe('Only this project (404 when it is not a project of the tenant; archived ones count). Omitted: every project, and the refusals that name none (project_id null).'),
  from: dateTime.optional().describe('Start (inclusive), rounded down to the minute. Default: `to` minus one hour.'),
  to: dateTime
    .optional()
    .describe(`End (exclusive), rounded up to the minute. Default: now. At most ${MAX_RANGE_MINUTES} minutes (24 hours) from \`from\`.`),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(MAX_LIMIT).describe('Rows per page (default and maximum 1,000).'),
  cursor: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('next_cursor of the previous page; it carries the range and project, so other parameters are ignored with it.'),
});
export type IngestStatsQuery = z.infer<typeof ingestStatsQuery>;

const count = z.number().int().min(0);

const REASON_HELP: Record<RefusalReason, string> = {
  validation: 'the trace or span failed validation (400/422; an OTLP span rejected in partialSuccess for its ids, name or times)',
  duplicate: 'native: 409 trace_exists (the trace is stored, or its id repeats in the batch)',
  in_flight: 'native: 503, an earlier write of the same id may still commit',
  quota: 'past the monthly trace quota (402, or rejected in partialSuccess)',
  project_archived: '403 error.project.archived',
  project_not_found: '404: the project named is not one of the tenant (counted under project_id null)',
  native_trace: 'OTLP spans of a trace ingested through /v1/ingest',
  embedding_dimension: 'native: embedding.dimension_mismatch',
  store_unavailable: 'a store refused or did not answer (503); nothing was acknowledged',
  error: 'any other failure (500)',
};

const reasonCounts = (unit: string) =>
  z
    .object(Object.fromEntries(REFUSAL_REASONS.map((r) => [r, count.optional().describe(REASON_HELP[r])])) as Record<RefusalReason, z.ZodOptional<typeof count>>)
    .describe(`${unit} refused, by reason; only reasons that occurred.`);

export const ingestStatsRow = z
  .object({
    project_id: z.guid().nullable().describe('null: refusals that named no project of the tenant (project_not_found; a session token without project_id).'),
    minute: isoDate.describe('The UTC minute the requests arrived in (every count of a request goes to it).'),
    traces_received: count.describe('Traces in ingest requests. OTLP: distinct trace ids among the valid spans of a request, once per request a trace appears in.'),
    traces_stored: count.describe('Traces acknowledged and readable (OTLP: once per request that stored spans of it).'),
    spans_received: count.describe('Every span of the requests, valid or not.'),
    spans_stored: count.describe('Spans acknowledged and readable.'),
    refused: reasonCounts('Spans').describe('Spans refused, by reason: spans_received = spans_stored + the sum of refused.'),
    refused_traces: reasonCounts('Traces').describe(
      'Traces refused, by reason: traces_received = traces_stored + the sum of refused_traces. An OTLP span that fails validation refuses no trace.',
    ),
  })
  .describe('IngestStatsMinute');
export type IngestStatsRow = z.infer<typeof ingestStatsRow>;

export const ingestStatsResponse = z
  .object({
    from: isoDate.describe('Effective start (a minute).'),
    to: isoDate.describe('Effective end, exclusive (a minute).'),
    project_id: z.guid().nullable(),
    stats: z.array(ingestStatsRow).describe('One row per project and minute that has counts, by minute then project; minutes without requests are omitted.'),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .describe('IngestStats');
export type IngestStatsResponse = z.infer<typeof ingestStatsResponse>;
