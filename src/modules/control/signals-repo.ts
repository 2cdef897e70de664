import type { Sql } from '../../stores/pg.js';

export interface TriggerMatch {
  tenant_id: string;
  policy_id: string;
  project_id: string;
  trace_id: string;
}

/**
 * What starts chains, read straight from the failure and evaluation tables: the control loop looks
 * at their state (which traces a cluster holds, which evaluations failed) in one set-based query
 * per pass instead of per-trace service calls, and only reads. A (policy, trace) pair that has a
 * chain is excluded by the anti-join, so the scan needs no watermark and a repeat adds nothing.
 *
 * A trace is taken once its fresh scoring is over (no eval candidate, no pending or running fresh
 * evaluation): a remediation is judged against those scores, so acting earlier would judge it
 * against nothing. A policy acts only on what happened after it was enabled (active_since): traces
 * stored since for failure triggers, evaluations completed since for eval triggers.
 */
export function controlSignalRepository(sql: Sql) {
  return {
    async matches(limit: number): Promise<TriggerMatch[]> {
      return sql<TriggerMatch[]>`
        with matched as (
          select p.tenant_id, p.id as policy_id, p.project_id, ct.trace_id
          from policies p
          join failure_clusters c on c.tenant_id = p.tenant_id and c.project_id = p.project_id and c.updated_at >= p.active_since
          join failure_cluster_traces ct on ct.cluster_id = c.id
          join trace_registry r on r.tenant_id = p.tenant_id and r.trace_id = ct.trace_id and r.created_at >= p.active_since
          where p.enabled
            and ((c.type <> 'RemediationRegression' and (p.trigger->'failure_types') ? c.type) or c.signature = p.trigger->>'cluster_signature')
          union
          select p.tenant_id, p.id, p.project_id, e.trace_id
          from policies p
          join evaluations e on e.tenant_id = p.tenant_id and e.project_id = p.project_id
            and e.rule_id = (p.trigger->>'eval_rule_id')::uuid and e.context = 'fresh'
            and e.status = 'completed' and e.passed = false and e.completed_at >= p.active_since
          where p.enabled and p.trigger ? 'eval_rule_id'
        )
        select m.* from matched m
        where not exists (select 1 from control_actions a where a.policy_id = m.policy_id and a.trace_id = m.trace_id and a.parent_id is null)
          and not exists (select 1 from eval_candidates ec where ec.tenant_id = m.tenant_id and ec.trace_id = m.trace_id)
          and not exists (select 1 from evaluations f where f.tenant_id = m.tenant_id and f.trace_id = m.trace_id
                          and f.context = 'fresh' and f.status in ('pending', 'running'))
        limit ${limit}`;
    },
  };
}

export type ControlSignalRepository = ReturnType<typeof controlSignalRepository>;
