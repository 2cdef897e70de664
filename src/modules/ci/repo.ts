import type { Sql } from '../../stores/pg.js';

export interface CiRunRow {
  id: string;
  tenant_id: string;
  dataset_id: string;
  run_id: string;
  min_pass_rate: number;
  created_at: Date;
}

export function ciRunRepository(sql: Sql) {
  return {
    async insert(row: Omit<CiRunRow, 'created_at'>): Promise<CiRunRow> {
      const [created] = await sql<CiRunRow[]>`insert into ci_runs ${sql(row)} returning *`;
      return created!;
    },

    async find(tenantId: string, id: string): Promise<CiRunRow | undefined> {
      const [row] = await sql<CiRunRow[]>`select * from ci_runs where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },
  };
}

export type CiRunRepository = ReturnType<typeof ciRunRepository>;
