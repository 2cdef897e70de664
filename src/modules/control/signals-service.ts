import { newId } from '../../platform/ids.js';
import type { TxSql } from '../../stores/pg.js';
import type { EvaluationObserver } from '../evals/service.js';
import type { ClusterJoinObserver } from '../failures/service.js';
import type { ControlSignalRepository } from './signals-repo.js';

/**
 * Receives what policies react to from the modules that know it, inside their transactions (so a
 * signal exists exactly when what it reports was committed): traces joining a failure cluster, and
 * a rule's fresh evaluation that did not pass. The control-scan job drains them (ControlTrigger).
 */
export class ControlSignals implements ClusterJoinObserver, EvaluationObserver {
  constructor(private readonly repo: Pick<ControlSignalRepository, 'insert' | 'eraseTraces'>) {}

  /** Data-subject erasure (src/modules/privacy): signals about these traces are dropped undelivered. Idempotent. */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseTraces(tenantId, traceIds);
  }

  async tracesJoined(tx: TxSql, tenantId: string, join: { projectId: string; type: string; signature: string; traceIds: readonly string[] }): Promise<void> {
    await this.repo.insert(
      tx,
      join.traceIds.map((traceId) => ({
        id: newId(),
        tenant_id: tenantId,
        project_id: join.projectId,
        trace_id: traceId,
        failure_type: join.type,
        cluster_signature: join.signature,
        eval_rule_id: null,
      })),
    );
  }

  async freshEvaluationFailed(tx: TxSql, tenantId: string, evaluation: { projectId: string; traceId: string; ruleId: string }): Promise<void> {
    await this.repo.insert(tx, [
      { id: newId(), tenant_id: tenantId, project_id: evaluation.projectId, trace_id: evaluation.traceId, failure_type: null, cluster_signature: null, eval_rule_id: evaluation.ruleId },
    ]);
  }
}
