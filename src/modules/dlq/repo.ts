import type postgres from 'postgres';
import type { Sql, TxSql } from '../../stores/pg.js';
import type { ListDlqQuery } from './schemas.js';

export interface DlqRow {
  id: string;
  tenant_id: string;
  kind: string;
  ref_id: string;
  payload: Record<string, unknown>;
  attempts: number;
  last_error: string;
  created_at: Date;
  resolved_at: Date | null;
  resolution: 'retried' | 'discarded' | null;
}

export interface NewDeadLetter {
  id: string;
  tenantId: string;
  kind: string;
  refId: string;
  payload: Record<string, unknown>;
  attempts: number;
  lastError: string;
}

/** The dead-letter table (sql/010_webhooks.sql) that every final failure of a job lands in. */
export function dlqRepository(sql: Sql) {
  return {
    async list(tenantId: string, q: ListDlqQuery, beforeId: string | null): Promise<DlqRow[]> {
      return sql<DlqRow[]>`
        select * from dlq where tenant_id = ${tenantId}
          ${q.state === 'open' ? sql`and resolved_at is null` : q.state === 'resolved' ? sql`and resolved_at is not null` : sql``}
          ${q.kind ? sql`and kind = ${q.kind}` : sql``}
          ${beforeId ? sql`and id < ${beforeId}` : sql``}
        order by id desc limit ${q.limit + 1}`;
    },

    async find(tenantId: string, id: string): Promise<DlqRow | undefined> {
      const [row] = await sql<DlqRow[]>`select * from dlq where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    /** A dead letter for `refId`, in the caller's transaction; none when one is open for it already. */
    async record(tx: TxSql, d: NewDeadLetter): Promise<void> {
      await tx`
        insert into dlq (id, tenant_id, kind, ref_id, payload, attempts, last_error)
        values (${d.id}, ${d.tenantId}, ${d.kind}, ${d.refId}, ${tx.json(d.payload as postgres.JSONValue)}, ${d.attempts}, ${d.lastError})
        on conflict (kind, ref_id) where resolved_at is null do nothing`;
    },

    /** Deletes the dead letters of `kind` for `refIds`, in the caller's transaction (the retention of what they copy). */
    async removeFor(tx: TxSql, tenantId: string, kind: string, refIds: readonly string[]): Promise<void> {
      await tx`delete from dlq where tenant_id = ${tenantId} and kind = ${kind} and ref_id = any(${refIds as string[]}::uuid[])`;
    },

    /** Closes an open entry; undefined when it was already resolved (a concurrent retry or discard). */
    async resolve(tenantId: string, id: string, resolution: 'retried' | 'discarded'): Promise<DlqRow | undefined> {
      const [row] = await sql<DlqRow[]>`
        update dlq set resolved_at = now(), resolution = ${resolution}
        where tenant_id = ${tenantId} and id = ${id} and resolved_at is null
        returning *`;
      return row;
    },
  };
}

export type DlqRepository = ReturnType<typeof dlqRepository>;
