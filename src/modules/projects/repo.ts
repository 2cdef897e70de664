import type { Sql, TxSql } from '../../stores/pg.js';

export interface ProjectRow {
  id: string;
  tenant_id: string;
  name: string;
  archived_at: Date | null;
  prompt_autoship_enabled: boolean;
  /** Days a trace is kept after it started; null keeps traces forever. */
  retention_days: number | null;
  created_at: Date;
  updated_at: Date;
}

export type ProjectStatusFilter = 'active' | 'archived' | 'all';

export function projectRepository(sql: Sql) {
  return {
    async insert(tenantId: string, id: string, name: string, db: Sql | TxSql = sql): Promise<ProjectRow> {
      const [row] = await db<ProjectRow[]>`
        insert into projects (id, tenant_id, name) values (${id}, ${tenantId}, ${name}) returning *`;
      return row!;
    },

    async find(tenantId: string, id: string, db: Sql | TxSql = sql): Promise<ProjectRow | undefined> {
      const [row] = await db<ProjectRow[]>`select * from projects where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async findMany(tenantId: string, ids: readonly string[]): Promise<ProjectRow[]> {
      return sql<ProjectRow[]>`select * from projects where tenant_id = ${tenantId} and id = any(${ids as string[]}::uuid[])`;
    },

    async list(tenantId: string, status: ProjectStatusFilter, afterId: string | null, limit: number): Promise<ProjectRow[]> {
      return sql<ProjectRow[]>`
        select * from projects
        where tenant_id = ${tenantId}
          ${afterId ? sql`and id > ${afterId}` : sql``}
          ${status === 'active' ? sql`and archived_at is null` : status === 'archived' ? sql`and archived_at is not null` : sql``}
        order by id
        limit ${limit}`;
    },

    async update(
      tenantId: string,
      id: string,
      patch: { name?: string; prompt_autoship_enabled?: boolean; retention_days?: number | null },
    ): Promise<ProjectRow | undefined> {
      // retention_days may be set to null (keep forever), so "absent" is a separate flag.
      const retention = patch.retention_days !== undefined;
      const [row] = await sql<ProjectRow[]>`
        update projects set
          name = coalesce(${patch.name ?? null}, name),
          prompt_autoship_enabled = coalesce(${patch.prompt_autoship_enabled ?? null}, prompt_autoship_enabled),
          retention_days = case when ${retention}::boolean then ${patch.retention_days ?? null}::integer else retention_days end,
          updated_at = now()
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row;
    },

    /**
     * Archives inside a transaction that holds the tenant row lock, so two concurrent archives
     * cannot both see "another active project" and leave the tenant with none.
     */
    async archiveUnlessLast(tenantId: string, id: string): Promise<{ row?: ProjectRow; lastActive: boolean }> {
      return sql.begin(async (tx) => {
        await tx`select id from tenants where id = ${tenantId} for update`;
        const row = await this.find(tenantId, id, tx);
        if (!row || row.archived_at) return { row, lastActive: false };
        const [others] = await tx<{ n: number }[]>`
          select count(*)::int as n from projects
          where tenant_id = ${tenantId} and archived_at is null and id <> ${id}`;
        if (!others || others.n === 0) return { row, lastActive: true };
        const [archived] = await tx<ProjectRow[]>`
          update projects set archived_at = now(), updated_at = now()
          where tenant_id = ${tenantId} and id = ${id} returning *`;
        return { row: archived, lastActive: false };
      });
    },

    async unarchive(tenantId: string, id: string): Promise<ProjectRow | undefined> {
      const [row] = await sql<ProjectRow[]>`
        update projects set archived_at = null, updated_at = case when archived_at is null then updated_at else now() end
        where tenant_id = ${tenantId} and id = ${id}
        returning *`;
      return row;
    },

    /** Every project of every tenant that has a retention period (the retention sweep). */
    async withRetention(): Promise<{ tenant_id: string; id: string; retention_days: number }[]> {
      return sql<{ tenant_id: string; id: string; retention_days: number }[]>`
        select tenant_id, id, retention_days from projects where retention_days is not null order by tenant_id, id`;
    },

    /** Every project of the tenant, archived ones too, by id (the retention status). */
    async all(tenantId: string): Promise<ProjectRow[]> {
      return sql<ProjectRow[]>`select * from projects where tenant_id = ${tenantId} order by id`;
    },

    async firstActive(tenantId: string, db: Sql | TxSql = sql): Promise<ProjectRow | undefined> {
      const [row] = await db<ProjectRow[]>`
        select * from projects where tenant_id = ${tenantId} and archived_at is null order by id limit 1`;
      return row;
    },
  };
}

export type ProjectRepository = ReturnType<typeof projectRepository>;
