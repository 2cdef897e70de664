import type { PlanName } from '../../platform/plans.js';
import type { Sql, TxSql } from '../../stores/pg.js';

export interface TenantRow {
  id: string;
  name: string;
  plan: PlanName;
  created_at: Date;
}

export function tenantRepository(sql: Sql) {
  return {
    async insert(db: TxSql, id: string, name: string, plan: PlanName): Promise<TenantRow> {
      const [row] = await db<TenantRow[]>`insert into tenants (id, name, plan) values (${id}, ${name}, ${plan}) returning *`;
      return row!;
    },
    async find(id: string): Promise<TenantRow | undefined> {
      const [row] = await sql<TenantRow[]>`select * from tenants where id = ${id}`;
      return row;
    },
    /** Newest first (UUIDv7 ids are time-ordered), after the keyset position `beforeId`; `limit` + 1 rows. */
    async listNewest(limit: number, beforeId: string | undefined): Promise<TenantRow[]> {
      return sql<TenantRow[]>`
        select * from tenants ${beforeId ? sql`where id < ${beforeId}` : sql``}
        order by id desc limit ${limit + 1}`;
    },
    async setPlan(id: string, plan: PlanName): Promise<TenantRow | undefined> {
      const [row] = await sql<TenantRow[]>`
        update tenants set plan = ${plan}, updated_at = now() where id = ${id} returning *`;
      return row;
    },
  };
}

export type TenantRepository = ReturnType<typeof tenantRepository>;
