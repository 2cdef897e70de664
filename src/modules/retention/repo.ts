import type postgres from 'postgres';
import type { Sql } from '../../stores/pg.js';

// Arbitrary constant: the advisory lock that makes sweeps exclusive across worker processes.
const SWEEP_LOCK = 7_245_020;

export interface SweepRow {
  project_id: string;
  swept_at: Date;
  cutoff: Date;
  removed: Record<string, number>;
}

/** Postgres state of data retention: the last sweep of each project (sql/020_retention.sql). */
export function retentionRepository(sql: Sql) {
  return {
    /**
     * Runs `work` while this process holds the sweep lock; null, without running it, when another
     * sweep holds it. A session lock on one reserved connection, held for the whole sweep.
     */
    async exclusive<T>(work: () => Promise<T>): Promise<T | null> {
      const conn = await sql.reserve();
      try {
        const [row] = await conn<{ locked: boolean }[]>`select pg_try_advisory_lock(${SWEEP_LOCK}) as locked`;
        if (!row?.locked) return null;
        try {
          return await work();
        } finally {
          await conn`select pg_advisory_unlock(${SWEEP_LOCK})`;
        }
      } finally {
        conn.release();
      }
    },

    async recordSweep(tenantId: string, projectId: string, sweptAt: Date, cutoff: Date, removed: Record<string, number>): Promise<void> {
      await sql`
        insert into retention_sweeps (project_id, tenant_id, swept_at, cutoff, removed)
        values (${projectId}, ${tenantId}, ${sweptAt}, ${cutoff}, ${sql.json(removed as postgres.JSONValue)})
        on conflict (project_id) do update
        set swept_at = excluded.swept_at, cutoff = excluded.cutoff, removed = excluded.removed`;
    },

    /** The last sweep of each of the tenant's projects that was ever swept. */
    async sweeps(tenantId: string): Promise<SweepRow[]> {
      return sql<SweepRow[]>`
        select project_id, swept_at, cutoff, removed from retention_sweeps where tenant_id = ${tenantId} order by project_id`;
    },
  };
}

export type RetentionRepository = ReturnType<typeof retentionRepository>;
