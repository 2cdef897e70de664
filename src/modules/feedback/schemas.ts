import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableJsonObject, storableText } from '../../platform/schemas.js';
import { checkBounds } from '../traces/schemas.js';

export const FEEDBACK_LABELS = ['good', 'bad', 'neutral'] as const;
export type FeedbackLabel = (typeof FEEDBACK_LABELS)[number];

/** A score at or above this is `good` when no label is sent. */
export const GOOD_FROM = 0.7;
/** A score at or below this is `bad` when no label is sent. */
export const BAD_UP_TO = 0.3;
export const MAX_COMMENT_CHARS = 10_000;
export const MAX_METADATA_BYTES = 64 * 1024;

const LABEL_RULE = `when absent, derived from score: >= ${GOOD_FROM} good, <= ${BAD_UP_TO} bad, otherwise neutral`;

const instant = z.iso.datetime({ offset: true });
const lowerGuid = z.guid().transform((s) => s.toLowerCase());

const metadata = storableJsonObject(MAX_METADATA_BYTES);

export const createFeedbackBody = z
  .object({
    trace_id: lowerGuid.describe("a trace of the caller's tenant; the feedback belongs to its project"),
    score: z.number().min(0).max(1).describe('0 to 1 inclusive'),
    label: z.enum(FEEDBACK_LABELS).optional().describe(LABEL_RULE),
    comment: storableText(z.string().max(MAX_COMMENT_CHARS)).optional(),
    metadata: metadata.optional().describe(`any JSON object, at most ${MAX_METADATA_BYTES} bytes serialized`),
  })
  .strict();
export type CreateFeedback = z.infer<typeof createFeedbackBody>;

export const feedback = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    project_id: z.guid().describe("the trace's project"),
    trace_id: z.guid(),
    score: z.number(),
    label: z.enum(FEEDBACK_LABELS).describe(`as sent, or ${LABEL_RULE}`),
    comment: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_by: z.string().describe('the user id of a session, or the id of the API key, that created it'),
    created_at: isoDate,
  })
  .describe('Feedback');
export type Feedback = z.infer<typeof feedback>;

export const listFeedbackQuery = z
  .object({
    ...pageQuery,
    project_id: lowerGuid.optional(),
    trace_id: lowerGuid.optional(),
    label: z.enum(FEEDBACK_LABELS).optional(),
    from: instant.optional().describe('inclusive lower bound of created_at'),
    to: instant.optional().describe('inclusive upper bound of created_at; >= from'),
  })
  .superRefine(checkBounds);
export type ListFeedbackQuery = z.infer<typeof listFeedbackQuery>;

export const feedbackList = z
  .object({ feedback: z.array(feedback), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('FeedbackList: newest first');
