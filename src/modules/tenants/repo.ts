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
    async setPlan(id: string, plan: PlanName): Promise<TenantRow | undefined> {
      const [row] = await sql<TenantRow[]>`
        update tenants set plan = ${plan}, updated_at = now() where id = ${id} returning *`;
      return row;
    },
  };
}

export type TenantRepository = ReturnType<typeof tenantRepository>;
