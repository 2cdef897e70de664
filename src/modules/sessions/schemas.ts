import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';
import { trace } from '../traces/schemas.js';

const instant = z.iso.datetime({ offset: true });

const sessionWindowShape = {
  project_id: z.guid().optional(),
  from: instant.optional().describe('inclusive lower bound of trace started_at; default: 30 days before `to`'),
  to: instant.optional().describe('inclusive upper bound of trace started_at; default: now'),
};

function fromNotAfterTo(query: { from?: string | undefined; to?: string | undefined }, ctx: z.RefinementCtx): void {
  if (query.from !== undefined && query.to !== undefined && Date.parse(query.from) > Date.parse(query.to)) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be >= from' });
  }
}

export const listSessionsQuery = z.object({ ...sessionWindowShape, ...pageQuery }).superRefine(fromNotAfterTo);
export type ListSessionsQuery = z.infer<typeof listSessionsQuery>;

export const sessionTracesQuery = z
  .object({
    ...sessionWindowShape,
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: pageQuery.cursor,
  })
  .superRefine(fromNotAfterTo);
export type SessionTracesQuery = z.infer<typeof sessionTracesQuery>;

export const sessionParams = z.object({ id: z.string().min(1).max(256) });

export const session = z
  .object({
    session_id: z.string(),
    trace_count: z.number().int(),
    span_count: z.number().int(),
    total_cost: z.number(),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    first_started_at: isoDate,
    last_ended_at: isoDate,
    error_count: z.number().int(),
  })
  .describe('Session');
export type Session = z.infer<typeof session>;

export const sessionList = z
  .object({ sessions: z.array(session), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('SessionList');

export const sessionDetail = z
  .object({ session, traces: z.array(trace), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('SessionDetail');
