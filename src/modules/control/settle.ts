import type { EvalRuleService, EvalService } from '../evals/service.js';
import type { Evaluation } from '../evals/schemas.js';
import type { FailureService } from '../failures/service.js';
import type { ActionRow, ControlActionRepository } from './actions-repo.js';
import { RUNNING_GRACE_MS } from './executor.js';
import type { ControlConfigService } from './config-service.js';
import type { ChainPlanner, ControlQueue } from './trigger.js';

const ACTIONS_PER_PASS = 200;
// An executed action whose re-scores were never asked for (its worker died in between) is judged without them after this.
const RESCORE_GRACE_MS = 60_000;
const PENDING_GRACE_MS = 30_000;

export const REGRESSION_TYPE = 'RemediationRegression';

const finished = (e: Evaluation) => e.status === 'completed' || e.status === 'failed';

/**
 * Judges actions that ran. An executed action succeeded when every re-score completed and passed
 * (with no re-scores, when the provider answered); a failed provider call, or a re-score that
 * failed or is below its threshold, is a failure and the chain takes its next action (gates
 * applied). Independently, each re-score below its original by more than the rule's
 * min_score_drop is recorded as a RemediationRegression failure (which fires failure.detected).
 */
export class ControlSettler {
  constructor(
    private readonly repo: ControlActionRepository,
    private readonly evals: Pick<EvalService, 'ofAction' | 'get'>,
    private readonly evalRules: Pick<EvalRuleService, 'get'>,
    private readonly failures: Pick<FailureService, 'record'>,
    private readonly config: Pick<ControlConfigService, 'policyRow'>,
    private readonly planner: Pick<ChainPlanner, 'next'>,
    private readonly queue: ControlQueue,
  ) {}

  async pass(): Promise<{ settled: number; requeued: number }> {
    let settled = 0;
    for (const action of await this.repo.unsettled(ACTIONS_PER_PASS)) {
      if (await this.settle(action)) settled += 1;
    }
    const stranded = await this.repo.stranded(new Date(Date.now() - PENDING_GRACE_MS), new Date(Date.now() - RUNNING_GRACE_MS), 1_000);
    await this.queue.enqueue(stranded);
    return { settled, requeued: stranded.length };
  }

  /** False while the action's re-scores are still coming. Safe to repeat: a chain's successor and a regression are recorded once. */
  private async settle(action: ActionRow): Promise<boolean> {
    let outcome: 'succeeded' | 'failed' = 'failed';
    let regressions = 0;
    if (action.status === 'executed') {
      const waitedLong = Date.now() - (action.executed_at?.getTime() ?? 0) > RESCORE_GRACE_MS;
      if (action.metadata.rescored !== true && !waitedLong) return false;
      const rescores = await this.evals.ofAction(action.tenant_id, action.id);
      if (!rescores.every(finished)) return false;
      regressions = await this.recordRegressions(action, rescores);
      if (rescores.every((e) => e.status === 'completed' && e.passed === true)) outcome = 'succeeded';
    }
    if (outcome === 'failed') {
      const policy = await this.config.policyRow(action.tenant_id, action.policy_id).catch(() => null);
      // A policy deleted or disabled since ends its chains where they are.
      if (policy?.enabled) await this.planner.next(policy, action.trace_id, action);
    }
    await this.repo.mergeMetadata(action.id, { outcome, regressions }, true);
    return true;
  }

  private async recordRegressions(action: ActionRow, rescores: readonly Evaluation[]): Promise<number> {
    let found = 0;
    for (const rescore of rescores) {
      if (rescore.status !== 'completed' || rescore.score === null || !rescore.original_evaluation_id) continue;
      const original = await this.evals.get(action.tenant_id, rescore.original_evaluation_id);
      const minDrop = rescore.rule_id ? await this.evalRules.get(action.tenant_id, rescore.rule_id).then((r) => r.min_score_drop, () => 0) : 0;
      if (original.score === null || original.score - rescore.score <= minDrop) continue;
      found += 1;
      await this.failures.record(action.tenant_id, {
        projectId: action.project_id,
        type: REGRESSION_TYPE,
        error: `${rescore.metric_name} dropped after a ${action.type} remediation`,
        traceId: action.trace_id,
        at: new Date(),
      });
    }
    return found;
  }
}
