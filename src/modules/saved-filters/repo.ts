import type { Sql } from '../../stores/pg.js';

export interface SavedFilterRow {
  id: string;
  tenant_id: string;
  project_id: string;
  name: string;
  filters: Record<string, unknown>;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

export function savedFilterRepository(sql: Sql) {
  return {
    async insert(row: Omit<SavedFilterRow, 'created_at' | 'updated_at'>): Promise<SavedFilterRow> {
      const [created] = await sql<SavedFilterRow[]>`
        insert into saved_filters ${sql({ ...row, filters: sql.json(row.filters as never) })} returning *`;
      return created!;
    },

    async find(tenantId: string, id: string): Promise<SavedFilterRow | undefined> {
      const [row] = await sql<SavedFilterRow[]>`select * from saved_filters where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async list(tenantId: string, projectId: string | undefined, afterId: string | null, limit: number): Promise<SavedFilterRow[]> {
      return sql<SavedFilterRow[]>`
        select * from saved_filters where tenant_id = ${tenantId}
          ${projectId ? sql`and project_id = ${projectId}` : sql``}
          ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit + 1}`;
    },

    async update(tenantId: string, id: string, patch: { name?: string | undefined; filters?: Record<string, unknown> | undefined }): Promise<SavedFilterRow | undefined> {
      const [row] = await sql<SavedFilterRow[]>`
        update saved_filters set
          name = coalesce(${patch.name ?? null}, name),
          filters = coalesce(${patch.filters ? sql.json(patch.filters as never) : null}::jsonb, filters),
          updated_at = date_trunc('milliseconds', now())
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row;
    },

    async remove(tenantId: string, id: string): Promise<void> {
      await sql`delete from saved_filters where tenant_id = ${tenantId} and id = ${id}`;
    },
  };
}

export type SavedFilterRepository = ReturnType<typeof savedFilterRepository>;
