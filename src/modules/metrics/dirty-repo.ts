import { observeStoreCall } from '../../platform/metrics.js';
import type { Sql, TxSql } from '../../stores/pg.js';

/** One (tenant, minute) whose traces changed and whose rollup must be recomputed. */
export interface DirtyMinute {
  tenantId: string;
  /** Start of the UTC minute, epoch ms. */
  minuteMs: number;
}

export interface ClaimedMinute extends DirtyMinute {
  /** The minute's mark count when it was claimed: completion forgets it only if no mark came since. */
  generation: number;
}

interface ClaimedRow {
  tenant_id: string;
  minute: Date;
  generation: number;
}

const uuids = (ids: readonly string[]) => ids as string[];

/**
 * Makes these minutes due at `dueAt` (or earlier if they already were) and bumps each one's
 * generation, in one statement; in the caller's transaction when given one. `minutes` must hold
 * each (tenant, minute) once.
 */
export async function markDirtyMinutes(sql: Sql | TxSql, minutes: readonly DirtyMinute[], dueAt: Date): Promise<void> {
  if (minutes.length === 0) return;
  await observeStoreCall('postgres', 'metrics.dirty_mark', () => (sql as TxSql)`
        insert into metrics_dirty_minutes as d (tenant_id, minute, due_at)
        select t.tenant_id, to_timestamp(t.ms / 1000.0), ${dueAt}
        from unnest(${minutes.map((m) => m.tenantId)}::uuid[], ${minutes.map((m) => m.minuteMs)}::float8[]) as t(tenant_id, ms)
        order by t.tenant_id, t.ms
        on conflict (tenant_id, minute) do update
          set due_at = least(d.due_at, excluded.due_at), generation = d.generation + 1`);
}

/**
 * SQL of the metrics dirty set (Postgres, sql/004_metrics_dirty.sql). Marks lock rows in key
 * order; claim and complete never wait for a row lock (SKIP LOCKED), so no two of them deadlock.
 */
export function metricsDirtyRepository(sql: Sql) {
  return {
    mark: (minutes: readonly DirtyMinute[], dueAt: Date) => markDirtyMinutes(sql, minutes, dueAt),

    /**
     * Leases up to `max` minutes due at `now`, oldest due first, until `leaseUntil`: rows locked by
     * another claim (or a mark) in flight are skipped, and a row claimed meanwhile fails the
     * `due_at <= now` recheck, so no minute goes to two claimers at once.
     */
    async claim(max: number, now: Date, leaseUntil: Date, tenantIds?: readonly string[]): Promise<ClaimedMinute[]> {
      const onlyTenants = tenantIds ? sql`and tenant_id = any(${uuids(tenantIds)}::uuid[])` : sql``;
      const rows = await observeStoreCall('postgres', 'metrics.dirty_claim', () => sql<ClaimedRow[]>`
        with due as materialized (
          select tenant_id, minute from metrics_dirty_minutes
          where due_at <= ${now} ${onlyTenants}
          order by due_at
          limit ${max}
          for update skip locked
        )
        update metrics_dirty_minutes d set due_at = ${leaseUntil}
        from due
        where d.tenant_id = due.tenant_id and d.minute = due.minute
        returning d.tenant_id, d.minute, d.generation`);
      return rows.map((r) => ({ tenantId: r.tenant_id, minuteMs: r.minute.getTime(), generation: r.generation }));
    },

    /**
     * Deletes claimed minutes whose generation is still the one claimed. A row locked by a mark in
     * flight is skipped: that mark bumps its generation, so it must stay.
     */
    async complete(claimed: readonly ClaimedMinute[]): Promise<void> {
      if (claimed.length === 0) return;
      await observeStoreCall('postgres', 'metrics.dirty_complete', () => sql`
        with done as materialized (
          select x.tenant_id, x.minute from metrics_dirty_minutes x
          join unnest(
            ${claimed.map((c) => c.tenantId)}::uuid[], ${claimed.map((c) => c.minuteMs)}::float8[],
            ${claimed.map((c) => c.generation)}::bigint[]
          ) as c(tenant_id, ms, generation)
            on x.tenant_id = c.tenant_id and x.minute = to_timestamp(c.ms / 1000.0) and x.generation = c.generation
          for update of x skip locked
        )
        delete from metrics_dirty_minutes d
        using done
        where d.tenant_id = done.tenant_id and d.minute = done.minute`);
    },
  };
}

export type MetricsDirtyRepository = ReturnType<typeof metricsDirtyRepository>;
