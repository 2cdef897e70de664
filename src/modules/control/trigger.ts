import { newId } from '../../platform/ids.js';
import type { ActionRow, ControlActionRepository } from './actions-repo.js';
import type { PolicyRow } from './config-repo.js';
import { nextAction, nextFallback } from './gates.js';
import type { ControlConfigService } from './config-service.js';
import type { ModelRef } from './schemas.js';
import type { EvalService } from '../evals/service.js';
import type { ControlSignalRepository, SignalRow } from './signals-repo.js';

const SIGNALS_PER_PASS = 500;
/** A signal whose trace is still being scored is looked at again this much later. */
const UNSETTLED_RETRY_SECONDS = 2;

/** A queued action: its id and its tenant. */
export interface QueuedAction {
  id: string;
  tenant_id: string;
}

export interface ControlQueue {
  enqueue(actions: readonly QueuedAction[]): Promise<void>;
}

/**
 * Creates a chain's actions. Each decision (the trace's counts, the gates, the insert) runs in one
 * transaction under a per-trace lock, so chains of different policies on the same trace see each
 * other's actions and the cascade cap holds across them. The unique chain root (policy, trace) and
 * the unique successor of an action make a repeated decision insert nothing.
 */
export class ChainPlanner {
  constructor(
    private readonly repo: ControlActionRepository,
    private readonly config: Pick<ControlConfigService, 'routeRow'>,
    private readonly queue: ControlQueue,
  ) {}

  /** The chain's next action after `previous` failed (its first when previous is null); undefined when it exists already. */
  async next(policy: PolicyRow, traceId: string, previous: ActionRow | null): Promise<ActionRow | undefined> {
    const chainId = previous?.chain_id ?? newId();
    const fallback = await this.fallbackOf(policy, chainId);
    const created = await this.repo.begin(async (tx) => {
      await this.repo.lockTrace(tx, policy.tenant_id, traceId);
      const counts = await this.repo.counts(tx, policy.tenant_id, traceId);
      const decision = nextAction({
        steps: policy.steps,
        maxRetryDepth: policy.max_retry_depth,
        maxCascadeDepth: policy.max_cascade_depth,
        requireApproval: policy.require_approval,
        previousStep: previous?.step_index ?? null,
        retries: counts.retries,
        remediations: counts.remediations,
        fallbackLeft: fallback !== null,
      });
      const route = decision.type === 'fallback_model' ? fallback : null;
      return this.repo.insert(tx, policy.tenant_id, {
        id: previous ? newId() : chainId,
        project_id: policy.project_id,
        trace_id: traceId,
        policy_id: policy.id,
        chain_id: chainId,
        parent_id: previous?.id ?? null,
        step_index: decision.stepIndex,
        type: decision.type,
        status: decision.requireApproval ? 'pending_approval' : 'pending',
        require_approval: decision.requireApproval,
        escalation_reason: decision.escalationReason,
        metadata: route ? { ...decision.metadata, route_model: route.model } : decision.metadata,
        model: route?.model ?? null,
        provider: route?.provider ?? null,
      });
    });
    // After commit: a lost enqueue leaves the action pending for the scan's reconcile.
    if (created?.status === 'pending') await this.queue.enqueue([created]).catch(() => {});
    return created;
  }

  private async fallbackOf(policy: PolicyRow, chainId: string): Promise<ModelRef | null> {
    const step = policy.steps.find((s) => s.type === 'fallback_model');
    if (step?.type !== 'fallback_model') return null;
    const route = await this.config.routeRow(policy.tenant_id, step.model_route_id);
    return route ? nextFallback(route, await this.repo.chainModels(policy.tenant_id, chainId)) : null;
  }
}

/**
 * Starts a chain for every enabled policy a signal (ControlSignals) triggers on its trace, once the
 * trace's scoring by eval rules is over (a remediation is judged against those scores). A policy
 * acts only on what happened after it was enabled. The chain root is unique per (policy, trace), so
 * a signal offered twice (a concurrent pass, a crash before its removal) starts nothing twice.
 */
export class ControlTrigger {
  constructor(
    private readonly signals: Pick<ControlSignalRepository, 'ready' | 'remove' | 'defer'>,
    private readonly config: Pick<ControlConfigService, 'enabledPoliciesOf'>,
    private readonly evals: Pick<EvalService, 'scoringSettled'>,
    private readonly planner: Pick<ChainPlanner, 'next'>,
  ) {}

  async pass(): Promise<number> {
    const byTenant = new Map<string, SignalRow[]>();
    for (const s of await this.signals.ready(SIGNALS_PER_PASS)) byTenant.set(s.tenant_id, [...(byTenant.get(s.tenant_id) ?? []), s]);
    let started = 0;
    for (const [tenantId, signals] of byTenant) {
      const settled = new Set(await this.evals.scoringSettled(tenantId, [...new Set(signals.map((s) => s.trace_id))]));
      const policies = await this.config.enabledPoliciesOf(tenantId);
      const offered: string[] = [];
      for (const signal of signals.filter((s) => settled.has(s.trace_id))) {
        for (const policy of policies.filter((p) => triggers(p, signal))) {
          if (await this.planner.next(policy, signal.trace_id, null)) started += 1;
        }
        offered.push(signal.id);
      }
      await this.signals.remove(offered);
      await this.signals.defer(signals.filter((s) => !settled.has(s.trace_id)).map((s) => s.id), UNSETTLED_RETRY_SECONDS);
    }
    return started;
  }
}

/** Whether the policy's trigger fires on the signal: its failure types (RemediationRegression never), its cluster signature, or its eval rule. */
function triggers(policy: PolicyRow, signal: SignalRow): boolean {
  if (policy.project_id !== signal.project_id || signal.at < policy.active_since) return false;
  const { failure_types: types, cluster_signature: signature, eval_rule_id: ruleId } = policy.trigger;
  if (signal.eval_rule_id !== null) return ruleId === signal.eval_rule_id;
  const byType = signal.failure_type !== 'RemediationRegression' && (types ?? []).includes(signal.failure_type ?? '');
  return byType || (signature !== undefined && signature === signal.cluster_signature);
}
