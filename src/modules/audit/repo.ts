import type { AuditRow } from '../../platform/audit/chain.js';
import type { Sql } from '../../stores/pg.js';

export interface AuditLogFilter {
  beforeSeq: number | null;
  from: Date | null;
  to: Date | null;
}

export function auditLogRepository(sql: Sql) {
  return {
    /** Newest first, keyset on seq (the chain's own order; created_at may tie or skew across replicas). */
    async list(tenantId: string, filter: AuditLogFilter, limit: number): Promise<AuditRow[]> {
      return sql<AuditRow[]>`
        select * from audit_log
        where tenant_id = ${tenantId}
          ${filter.beforeSeq !== null ? sql`and seq < ${filter.beforeSeq}` : sql``}
          ${filter.from ? sql`and created_at >= ${filter.from}` : sql``}
          ${filter.to ? sql`and created_at < ${filter.to}` : sql``}
        order by seq desc
        limit ${limit}`;
    },
  };
}

export type AuditLogRepository = ReturnType<typeof auditLogRepository>;
