import type { TxSql } from './pg.js';

/**
 * A stored trace some background consumer still has to look at. The triggers
 * queue_readable_traces_for_rules_on_insert/_on_update on trace_registry write them
 * (sql/009_failures.sql, named in sql/024_trigger_names.sql).
 */
export interface TraceCandidate {
  tenant_id: string;
  trace_id: string;
  project_id: string;
}

/** The outboxes of newly readable traces: one per consumer (eval rules, failure rules). */
export type TraceOutboxTable = 'eval_candidates' | 'failure_candidates';

/**
 * Draining one outbox: ready candidates are claimed `for update skip locked` (concurrent drains
 * skip each other's) and dropped in the same transaction that acts on them.
 */
export function traceOutbox(table: TraceOutboxTable) {
  return {
    async claim(tx: TxSql, limit: number): Promise<TraceCandidate[]> {
      return tx<TraceCandidate[]>`
        select tenant_id, trace_id, project_id from ${tx(table)}
        where ready_at <= now() order by ready_at limit ${limit} for update skip locked`;
    },

    async drop(tx: TxSql, candidates: readonly TraceCandidate[]): Promise<void> {
      if (candidates.length === 0) return;
      await tx`
        delete from ${tx(table)} c
        using unnest(${candidates.map((c) => c.tenant_id)}::uuid[], ${candidates.map((c) => c.trace_id)}::uuid[]) as t(tenant_id, trace_id)
        where c.tenant_id = t.tenant_id and c.trace_id = t.trace_id`;
    },
  };
}
