import type postgres from 'postgres';
import type { Sql } from '../../stores/pg.js';
import type { FeedbackLabel } from './schemas.js';

export interface FeedbackRow {
  id: string;
  tenant_id: string;
  project_id: string;
  trace_id: string;
  score: number;
  label: FeedbackLabel;
  comment: string | null;
  metadata: Record<string, unknown>;
  created_by: string;
  created_at: Date;
}

export type NewFeedback = Omit<FeedbackRow, 'tenant_id' | 'created_at'>;

/** Filters of a listing; time bounds are inclusive whole milliseconds (created_at's precision). */
export interface FeedbackFilter {
  projectId: string | null;
  traceId: string | null;
  label: FeedbackLabel | null;
  fromMs: number | null;
  toMs: number | null;
}

/** Keyset position of the last row of a page: (created_at, id), both descending. */
export interface FeedbackPosition {
  createdAtMs: number;
  id: string;
}

export function feedbackRepository(sql: Sql) {
  // Epoch milliseconds rather than a Date parameter: a Date before year 1 serializes as year 0000,
  // which Postgres refuses, and `from` may be any ISO date-time.
  const at = (ms: number) => sql`to_timestamp(${ms}::float8 / 1000)`;

  return {
    async insert(tenantId: string, f: NewFeedback): Promise<FeedbackRow> {
      const [row] = await sql<FeedbackRow[]>`
        insert into feedback (id, tenant_id, project_id, trace_id, score, label, comment, metadata, created_by)
        values (${f.id}, ${tenantId}, ${f.project_id}, ${f.trace_id}, ${f.score}, ${f.label}, ${f.comment},
                ${sql.json(f.metadata as postgres.JSONValue)}, ${f.created_by})
        returning *`;
      return row!;
    },

    async list(tenantId: string, filter: FeedbackFilter, after: FeedbackPosition | null, limit: number): Promise<FeedbackRow[]> {
      return sql<FeedbackRow[]>`
        select * from feedback
        where tenant_id = ${tenantId}
          ${filter.projectId ? sql`and project_id = ${filter.projectId}` : sql``}
          ${filter.traceId ? sql`and trace_id = ${filter.traceId}` : sql``}
          ${filter.label ? sql`and label = ${filter.label}` : sql``}
          ${filter.fromMs !== null ? sql`and created_at >= ${at(filter.fromMs)}` : sql``}
          ${filter.toMs !== null ? sql`and created_at <= ${at(filter.toMs)}` : sql``}
          ${after ? sql`and (created_at, id) < (${at(after.createdAtMs)}, ${after.id}::uuid)` : sql``}
        order by created_at desc, id desc
        limit ${limit}`;
    },
  };
}

export type FeedbackRepository = ReturnType<typeof feedbackRepository>;
