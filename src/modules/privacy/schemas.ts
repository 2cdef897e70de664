import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';

export const REQUEST_TYPES = ['erasure', 'export'] as const;
export const SUBJECT_KINDS = ['session_id', 'external_id', 'user_id'] as const;
export const REQUEST_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
export type RequestType = (typeof REQUEST_TYPES)[number];
export type SubjectKind = (typeof SUBJECT_KINDS)[number];
export type RequestStatus = (typeof REQUEST_STATUSES)[number];

/** How long an export's file is served after it completes. */
export const EXPORT_TTL_MS = 7 * 86_400_000;

const subjectValue = z.string().min(1).max(256);

export const subjectInput = z
  .object({
    session_id: subjectValue.optional().describe("the traces' session_id (native field; OTLP session.id and its aliases)"),
    external_id: subjectValue.optional().describe("the traces' external_id"),
    user_id: subjectValue.optional().describe('an end-user id: tag_map user_id, trace metadata user_id, span attributes user.id, enduser.id'),
  })
  .strict()
  .refine((s) => SUBJECT_KINDS.filter((k) => s[k] !== undefined).length === 1, {
    message: 'name exactly one of session_id, external_id, user_id',
  })
  .describe('exactly one of session_id, external_id, user_id (1 to 256 characters)');

export const createRequestBody = z
  .object({
    type: z.enum(REQUEST_TYPES).describe('erasure: delete everything stored of the subject; export: a JSONL file of it'),
    subject: subjectInput,
  })
  .strict();
export type CreateRequest = z.infer<typeof createRequestBody>;

/** The subject as the body named it: its kind and its value. */
export function subjectOf(body: CreateRequest): { kind: SubjectKind; value: string } {
  const kind = SUBJECT_KINDS.find((k) => body.subject[k] !== undefined)!;
  return { kind, value: body.subject[kind]! };
}

const count = z.number().int();
export const requestCounts = z
  .object({ traces: count, spans: count, vectors: count, evaluations: count, feedback: count, dataset_items: count })
  .describe('what was found of the subject: erased (erasure) or written to the file (export; vectors are not exported)');
export type RequestCounts = z.infer<typeof requestCounts>;
export const ZERO_COUNTS: RequestCounts = { traces: 0, spans: 0, vectors: 0, evaluations: 0, feedback: 0, dataset_items: 0 };

export const dataSubjectRequest = z
  .object({
    id: z.guid(),
    type: z.enum(REQUEST_TYPES),
    subject_kind: z.enum(SUBJECT_KINDS).describe('which identifier named the subject; its value is never returned nor kept after processing'),
    status: z.enum(REQUEST_STATUSES),
    counts: requestCounts,
    error: z.string().nullable(),
    created_at: isoDate,
    completed_at: isoDate.nullable(),
    download_url: z.string().nullable().describe('completed exports only: GET it for the JSONL file (owner session)'),
    expires_at: isoDate.nullable().describe('exports: the file is deleted then (7 days after completion)'),
  })
  .describe('DataSubjectRequest');
export type DataSubjectRequest = z.infer<typeof dataSubjectRequest>;

export const listRequestsQuery = z.object({ ...pageQuery });
export type ListRequestsQuery = z.infer<typeof listRequestsQuery>;

export const requestList = z
  .object({ requests: z.array(dataSubjectRequest), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('DataSubjectRequestList: newest first');

/** Payload of the `data-subject-requests` queue. */
export const requestJob = z.object({ tenant_id: z.guid(), request_id: z.guid() });
export type RequestJob = z.infer<typeof requestJob>;
