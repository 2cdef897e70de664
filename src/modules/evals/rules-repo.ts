import type { Sql, TxSql } from '../../stores/pg.js';
import { traceOutbox, type TraceCandidate } from '../../stores/trace-outbox.js';

/** The configuration an eval rule and each of its versions carry. */
export interface RuleSettings {
  name: string;
  metric_name: string;
  project_id: string | null;
  filter: Record<string, unknown>;
  sampling_rate: number;
  config: Record<string, unknown>;
  threshold: number;
  min_score_drop: number;
  enabled: boolean;
}

export interface RuleRow extends RuleSettings {
  id: string;
  tenant_id: string;
  current_version_id: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow extends RuleSettings {
  id: string;
  tenant_id: string;
  rule_id: string;
  version: number;
  created_at: Date;
}

export type Candidate = TraceCandidate;

export function evalRuleRepository(sql: Sql) {
  const outbox = traceOutbox('eval_candidates');
  const settingsOf = (db: Sql | TxSql, s: RuleSettings) => ({
    name: s.name,
    metric_name: s.metric_name,
    project_id: s.project_id,
    filter: db.json(s.filter as never),
    sampling_rate: s.sampling_rate,
    config: db.json(s.config as never),
    threshold: s.threshold,
    min_score_drop: s.min_score_drop,
    enabled: s.enabled,
  });

  async function snapshot(tx: TxSql, rule: RuleRow, versionId: string): Promise<void> {
    await tx`insert into eval_versions ${tx({ id: versionId, tenant_id: rule.tenant_id, rule_id: rule.id, version: rule.version, ...settingsOf(tx, rule) })}`;
  }

  return {
    /**
     * Creates a rule and its first version. The tenant row lock serialises creations, so two at
     * once cannot both pass the plan's rule cap.
     */
    async create(tenantId: string, id: string, versionId: string, settings: RuleSettings, cap: number | null): Promise<RuleRow | 'over_cap'> {
      return sql.begin(async (tx) => {
        await tx`select id from tenants where id = ${tenantId} for update`;
        if (cap !== null) {
          const [count] = await tx<{ n: number }[]>`select count(*)::int as n from eval_rules where tenant_id = ${tenantId}`;
          if (count!.n >= cap) return 'over_cap' as const;
        }
        const [rule] = await tx<RuleRow[]>`
          insert into eval_rules ${tx({ id, tenant_id: tenantId, current_version_id: versionId, version: 1, ...settingsOf(tx, settings) })}
          returning *`;
        await snapshot(tx, rule!, versionId);
        return rule!;
      });
    },

    /** Applies `patch` and snapshots the result as the next version, under the rule's row lock. */
    async update(tenantId: string, id: string, versionId: string, patch: (current: RuleSettings) => RuleSettings): Promise<RuleRow | undefined> {
      return sql.begin(async (tx) => {
        const [current] = await tx<RuleRow[]>`select * from eval_rules where tenant_id = ${tenantId} and id = ${id} for update`;
        if (!current) return undefined;
        const [rule] = await tx<RuleRow[]>`
          update eval_rules set ${tx(settingsOf(tx, patch(current)))},
            current_version_id = ${versionId}, version = version + 1, updated_at = now()
          where id = ${id} returning *`;
        await snapshot(tx, rule!, versionId);
        return rule;
      });
    },

    async find(tenantId: string, id: string): Promise<RuleRow | undefined> {
      const [row] = await sql<RuleRow[]>`select * from eval_rules where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async list(tenantId: string, enabled: boolean | undefined, afterId: string | null, limit: number): Promise<RuleRow[]> {
      return sql<RuleRow[]>`
        select * from eval_rules where tenant_id = ${tenantId}
          ${enabled === undefined ? sql`` : sql`and enabled = ${enabled}`}
          ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit + 1}`;
    },

    async count(tenantId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from eval_rules where tenant_id = ${tenantId}`;
      return row!.n;
    },

    async remove(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`delete from eval_rules where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },

    async findVersion(tenantId: string, id: string): Promise<VersionRow | undefined> {
      const [row] = await sql<VersionRow[]>`select * from eval_versions where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async enabledRules(tenantIds: readonly string[], db: Sql | TxSql = sql): Promise<RuleRow[]> {
      return db<RuleRow[]>`select * from eval_rules where enabled and tenant_id = any(${tenantIds as string[]}::uuid[]) order by id`;
    },

    /** Ready candidates of the eval_candidates outbox, locked for this transaction (src/stores/trace-outbox.ts). */
    claimCandidates: (tx: TxSql, limit: number) => outbox.claim(tx, limit),
    dropCandidates: (tx: TxSql, candidates: readonly Candidate[]) => outbox.drop(tx, candidates),

    begin<T>(work: (tx: TxSql) => Promise<T>): Promise<T> {
      return sql.begin(work) as Promise<T>;
    },
  };
}

export type EvalRuleRepository = ReturnType<typeof evalRuleRepository>;
