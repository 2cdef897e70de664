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

    /** Data-subject requests: the feedback on these traces, oldest first. */
    async ofTraces(tenantId: string, traceIds: readonly string[]): Promise<FeedbackRow[]> {
      return sql<FeedbackRow[]>`
        select * from feedback where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) order by created_at, id`;
    },

    async countOfTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from feedback where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`;
      return row!.n;
    },

    async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql`delete from feedback where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) returning id`;
      return rows.length;
    },
  };
}

export type FeedbackRepository = ReturnType<typeof feedbackRepository>;
