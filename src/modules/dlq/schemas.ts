import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';

export const DLQ_STATES = ['open', 'resolved', 'all'] as const;

export const listDlqQuery = z.object({
  ...pageQuery,
  state: z.enum(DLQ_STATES).default('open').describe('open (default): not yet retried or discarded'),
  kind: z.string().min(1).max(100).optional().describe('e.g. webhook_delivery'),
});
export type ListDlqQuery = z.infer<typeof listDlqQuery>;

export const dlqEntry = z
  .object({
    id: z.guid(),
    kind: z.string().describe('what failed: webhook_delivery'),
    ref_id: z.guid().describe('the failed thing (for webhook_delivery: the dispatch)'),
    summary: z.string().describe('one line for people, e.g. "failure.detected to webhook <id>"'),
    payload: z.record(z.string(), z.unknown()).describe('what would be retried (for webhook_delivery: webhook_id and the event)'),
    attempts: z.number().int(),
    last_error: z.string(),
    created_at: isoDate,
    resolved_at: isoDate.nullable(),
    resolution: z.enum(['retried', 'discarded']).nullable(),
  })
  .describe('DlqEntry');
export type DlqEntry = z.infer<typeof dlqEntry>;

export const dlqList = z
  .object({ entries: z.array(dlqEntry), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('DlqList: newest first');
