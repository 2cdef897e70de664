import type { Sql } from '../../stores/pg.js';
import type { RequestCounts, RequestStatus, RequestType, SubjectKind } from './schemas.js';

export interface RequestRow {
  id: string;
  tenant_id: string;
  type: RequestType;
  subject_kind: SubjectKind;
  subject_hash: string;
  /** Only while queued or running (a check constraint of the table). */
  subject_value: string | null;
  status: RequestStatus;
  counts: Partial<RequestCounts>;
  error: string | null;
  requested_by: string;
  attempts: number;
  created_at: Date;
  started_at: Date | null;
  heartbeat_at: Date | null;
  completed_at: Date | null;
  expires_at: Date | null;
}

export type NewRequest = Pick<RequestRow, 'id' | 'tenant_id' | 'type' | 'subject_kind' | 'subject_hash' | 'subject_value' | 'requested_by'>;

export interface RequestTrace {
  trace_id: string;
  project_id: string;
}

type TraceState = 'found' | 'counted' | 'erased';

/** Columns a listing and a read need (never subject_value). */
const VIEW_COLUMNS = (sql: Sql) =>
  sql`id, tenant_id, type, subject_kind, subject_hash, null::text as subject_value, status, counts, error, requested_by, attempts,
      created_at, started_at, heartbeat_at, completed_at, expires_at`;

/** Data-subject requests, the traces an erasure works through, and export files (sql/021_data_subject_requests.sql). */
export function requestRepository(sql: Sql) {
  return {
    async insert(row: NewRequest): Promise<RequestRow> {
      const [created] = await sql<RequestRow[]>`insert into data_subject_requests ${sql(row)} returning ${VIEW_COLUMNS(sql)}`;
      return created!;
    },

    async find(tenantId: string, id: string): Promise<RequestRow | undefined> {
      const [row] = await sql<RequestRow[]>`select ${VIEW_COLUMNS(sql)} from data_subject_requests where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    /** Newest first (ids are time-ordered). */
    async list(tenantId: string, beforeId: string | null, limit: number): Promise<RequestRow[]> {
      return sql<RequestRow[]>`
        select ${VIEW_COLUMNS(sql)} from data_subject_requests
        where tenant_id = ${tenantId} ${beforeId ? sql`and id < ${beforeId}` : sql``}
        order by id desc limit ${limit}`;
    },

    /** Requests not finished yet (queued or running), oldest first. */
    async open(tenantId: string): Promise<Pick<RequestRow, 'id' | 'type' | 'status' | 'created_at'>[]> {
      return sql<Pick<RequestRow, 'id' | 'type' | 'status' | 'created_at'>[]>`
        select id, type, status, created_at from data_subject_requests
        where tenant_id = ${tenantId} and status in ('queued', 'running') order by id`;
    },

    /** Takes a queued request, or a running one whose worker stopped beating; whoever gets the row (with its subject) owns it. */
    async claim(id: string, staleBefore: Date): Promise<RequestRow | undefined> {
      const [row] = await sql<RequestRow[]>`
        update data_subject_requests
        set status = 'running', started_at = coalesce(started_at, now()), heartbeat_at = now(), attempts = attempts + 1
        where id = ${id} and (status = 'queued' or (status = 'running' and heartbeat_at < ${staleBefore}))
        returning *`;
      return row;
    },

    async heartbeat(id: string): Promise<void> {
      await sql`update data_subject_requests set heartbeat_at = now() where id = ${id} and status = 'running'`;
    },

    /** Gives a request back after a failed attempt (its job retries; the reconcile re-queues it should the job be lost). */
    async release(id: string): Promise<void> {
      await sql`update data_subject_requests set status = 'queued', heartbeat_at = now() where id = ${id} and status = 'running'`;
    },

    /**
     * Done: the raw subject value and the erasure's trace list go in the same statement. The expiry
     * is counted from the same completed_at, on the database's clock: exactly `expiresAfterMs` later.
     */
    async complete(id: string, counts: RequestCounts | null, expiresAfterMs: number | null): Promise<RequestRow | undefined> {
      return sql.begin(async (tx) => {
        await tx`delete from data_subject_request_traces where request_id = ${id}`;
        const [row] = await tx<RequestRow[]>`
          update data_subject_requests
          set status = 'completed', subject_value = null, completed_at = date_trunc('milliseconds', now()),
              expires_at = date_trunc('milliseconds', now()) + ${expiresAfterMs}::bigint * interval '1 millisecond',
              counts = coalesce(${counts === null ? null : tx.json(counts)}::jsonb, counts)
          where id = ${id} and status = 'running'
          returning *`;
        return row;
      });
    },

    /** Given up: as complete, and an export's partial file goes too. */
    async fail(id: string, error: string): Promise<RequestRow | undefined> {
      return sql.begin(async (tx) => {
        await tx`delete from data_subject_request_traces where request_id = ${id}`;
        await tx`delete from data_subject_exports where request_id = ${id}`;
        const [row] = await tx<RequestRow[]>`
          update data_subject_requests
          set status = 'failed', subject_value = null, error = ${error}, completed_at = date_trunc('milliseconds', now())
          where id = ${id} and status = 'running'
          returning *`;
        return row;
      });
    },

    /** Queued requests nobody took within `queuedBefore`, running ones whose heartbeat stopped before `staleBefore`. */
    async stranded(queuedBefore: Date, staleBefore: Date, limit: number): Promise<{ id: string; tenant_id: string }[]> {
      return sql<{ id: string; tenant_id: string }[]>`
        select id, tenant_id from data_subject_requests
        where (status = 'queued' and coalesce(heartbeat_at, created_at) < ${queuedBefore})
           or (status = 'running' and heartbeat_at < ${staleBefore})
        order by created_at limit ${limit}`;
    },

    // --- an erasure's traces

    /** Remembers traces found; returns how many were not known yet. */
    async addTraces(id: string, traces: readonly RequestTrace[]): Promise<number> {
      if (traces.length === 0) return 0;
      const rows = await sql`
        insert into data_subject_request_traces (request_id, trace_id, project_id)
        select ${id}, t.trace_id, t.project_id
        from unnest(${traces.map((t) => t.trace_id)}::uuid[], ${traces.map((t) => t.project_id)}::uuid[]) as t(trace_id, project_id)
        on conflict do nothing returning trace_id`;
      return rows.length;
    },

    /** Up to `limit` traces in `state`, after `afterId` (trace id order). */
    async traces(id: string, state: TraceState | null, afterId: string | null, limit: number): Promise<RequestTrace[]> {
      return sql<RequestTrace[]>`
        select trace_id, project_id from data_subject_request_traces
        where request_id = ${id} ${state ? sql`and state = ${state}` : sql``} ${afterId ? sql`and trace_id > ${afterId}` : sql``}
        order by trace_id limit ${limit}`;
    },

    /** What these found traces held is added to the request's counts, and they become counted, at once. */
    async markCounted(id: string, traceIds: readonly string[], add: RequestCounts): Promise<void> {
      await sql.begin(async (tx) => {
        const moved = await tx`
          update data_subject_request_traces set state = 'counted'
          where request_id = ${id} and trace_id = any(${traceIds as string[]}::uuid[]) and state = 'found' returning trace_id`;
        if (moved.length !== traceIds.length) throw new Error('data-subject request traces changed while counted; the attempt is retried');
        await tx`
          update data_subject_requests set counts = (
            select jsonb_object_agg(key, coalesce((counts ->> key)::bigint, 0) + (${tx.json(add)}::jsonb ->> key)::bigint)
            from jsonb_object_keys(${tx.json(add)}::jsonb) as key)
          where id = ${id}`;
      });
    },

    async markErased(id: string, traceIds: readonly string[]): Promise<void> {
      await sql`update data_subject_request_traces set state = 'erased' where request_id = ${id} and trace_id = any(${traceIds as string[]}::uuid[])`;
    },

    async counts(id: string): Promise<Partial<RequestCounts>> {
      const [row] = await sql<{ counts: Partial<RequestCounts> }[]>`select counts from data_subject_requests where id = ${id}`;
      return row?.counts ?? {};
    },

    // --- export files

    async clearExport(id: string): Promise<void> {
      await sql`delete from data_subject_exports where request_id = ${id}`;
    },

    async appendChunk(id: string, seq: number, chunk: string): Promise<void> {
      await sql`insert into data_subject_exports (request_id, seq, chunk) values (${id}, ${seq}, ${chunk})`;
    },

    async chunk(id: string, seq: number): Promise<string | undefined> {
      const [row] = await sql<{ chunk: string }[]>`select chunk from data_subject_exports where request_id = ${id} and seq = ${seq}`;
      return row?.chunk;
    },

    /** Files past their expiry are deleted (the request stays, answering 410 for its download). */
    async dropExpiredExports(): Promise<number> {
      const rows = await sql`
        delete from data_subject_exports e using data_subject_requests r
        where r.id = e.request_id and r.expires_at <= now() returning e.request_id`;
      return new Set(rows.map((r) => r.request_id as string)).size;
    },

    /**
     * An erasure makes the subject's earlier exports of the tenant expire now: their files are a
     * copy of what is being erased.
     */
    async expireExportsOf(tenantId: string, subjectHash: string): Promise<void> {
      await sql.begin(async (tx) => {
        const expired = await tx<{ id: string }[]>`
          update data_subject_requests set expires_at = least(coalesce(expires_at, now()), now())
          where tenant_id = ${tenantId} and subject_hash = ${subjectHash} and type = 'export' and status = 'completed'
          returning id`;
        if (expired.length > 0) await tx`delete from data_subject_exports where request_id = any(${expired.map((r) => r.id)}::uuid[])`;
      });
    },
  };
}

export type RequestRepository = ReturnType<typeof requestRepository>;
