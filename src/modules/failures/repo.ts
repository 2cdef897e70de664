import type { Sql, TxSql } from '../../stores/pg.js';
import { traceOutbox, type TraceCandidate } from '../../stores/trace-outbox.js';
import type { RuleMatch } from './schemas.js';

export interface RuleSettings {
  name: string;
  project_id: string | null;
  enabled: boolean;
  match: RuleMatch;
}

export interface FailureRuleRow extends RuleSettings {
  id: string;
  tenant_id: string;
  created_at: Date;
  updated_at: Date;
}

export type Candidate = TraceCandidate;

/** Failure rules and the outbox of stored traces they still have to look at (sql/009_failures.sql). */
export function failureRuleRepository(sql: Sql) {
  const outbox = traceOutbox('failure_candidates');
  const columns = (db: Sql | TxSql, s: RuleSettings) => ({
    name: s.name,
    project_id: s.project_id,
    enabled: s.enabled,
    match: db.json(s.match as never),
  });

  return {
    async insert(tenantId: string, id: string, settings: RuleSettings): Promise<FailureRuleRow> {
      const [row] = await sql<FailureRuleRow[]>`
        insert into failure_rules ${sql({ id, tenant_id: tenantId, ...columns(sql, settings) })} returning *`;
      return row!;
    },

    /** Applies `patch` to the current settings under the rule's row lock. */
    async update(tenantId: string, id: string, patch: (current: RuleSettings) => RuleSettings): Promise<FailureRuleRow | undefined> {
      return sql.begin(async (tx) => {
        const [current] = await tx<FailureRuleRow[]>`select * from failure_rules where tenant_id = ${tenantId} and id = ${id} for update`;
        if (!current) return undefined;
        const [row] = await tx<FailureRuleRow[]>`
          update failure_rules set ${tx(columns(tx, patch(current)))}, updated_at = now() where id = ${id} returning *`;
        return row;
      }) as Promise<FailureRuleRow | undefined>;
    },

    async find(tenantId: string, id: string): Promise<FailureRuleRow | undefined> {
      const [row] = await sql<FailureRuleRow[]>`select * from failure_rules where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async list(tenantId: string, enabled: boolean | undefined, afterId: string | null, limit: number): Promise<FailureRuleRow[]> {
      return sql<FailureRuleRow[]>`
        select * from failure_rules where tenant_id = ${tenantId}
          ${enabled === undefined ? sql`` : sql`and enabled = ${enabled}`}
          ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit + 1}`;
    },

    async remove(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`delete from failure_rules where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },

    async enabledRules(tenantIds: readonly string[], db: Sql | TxSql = sql): Promise<FailureRuleRow[]> {
      return db<FailureRuleRow[]>`select * from failure_rules where enabled and tenant_id = any(${tenantIds as string[]}::uuid[]) order by id`;
    },

    /** Ready candidates of the failure_candidates outbox, locked for this transaction (src/stores/trace-outbox.ts). */
    claimCandidates: (tx: TxSql, limit: number) => outbox.claim(tx, limit),
    dropCandidates: (tx: TxSql, candidates: readonly Candidate[]) => outbox.drop(tx, candidates),

    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },
  };
}

export type FailureRuleRepository = ReturnType<typeof failureRuleRepository>;
