import type { EscalationReason, ModelRef, PolicyStep, StepType } from './schemas.js';

/** What the gates look at: the policy's plan and caps, and what the trace has had so far. */
export interface GateInput {
  steps: readonly PolicyStep[];
  maxRetryDepth: number;
  maxCascadeDepth: number;
  requireApproval: boolean;
  /** Index of the step of the action that just failed; null for a chain's first action. */
  previousStep: number | null;
  /** retry actions on the trace, every policy. */
  retries: number;
  /** retry + fallback_model + prompt_modification actions on the trace, every policy. */
  remediations: number;
  /** Whether the fallback_model step's route still has a model this chain has not tried. */
  fallbackLeft: boolean;
}

export interface NextAction {
  type: StepType;
  stepIndex: number;
  requireApproval: boolean;
  escalationReason: EscalationReason | null;
  metadata: Record<string, unknown>;
}

const escalate = (stepIndex: number, reason: EscalationReason, metadata: Record<string, unknown> = {}): NextAction => ({
  type: 'escalate',
  stepIndex,
  requireApproval: true,
  escalationReason: reason,
  metadata,
});

/**
 * The step a chain takes next, before the gates. A retry repeats until the retry cap, then the
 * chain moves on when a later step can still remediate (else the retry gate escalates); a
 * fallback_model step repeats while its route has untried models; any other step runs once.
 */
function plannedStep(input: GateInput): number {
  const { steps } = input;
  let index = input.previousStep ?? 0;
  const canRepeat = (i: number) => steps[i]?.type === 'retry' || (steps[i]?.type === 'fallback_model' && input.fallbackLeft);
  if (input.previousStep !== null && !canRepeat(index)) index += 1;
  for (;;) {
    const step = steps[index];
    if (step?.type === 'fallback_model' && !input.fallbackLeft) index += 1;
    else if (step?.type === 'retry' && input.retries >= input.maxRetryDepth && laterRemediation(steps, index)) index += 1;
    else return index;
  }
}

const laterRemediation = (steps: readonly PolicyStep[], index: number) =>
  steps.slice(index + 1).some((s) => s.type === 'prompt_modification' || s.type === 'fallback_model');

/**
 * The next action of a chain, gates applied in the spec's order: the cascade gate (remediations of
 * the trace across all policies at max_cascade_depth) before the retry gate (retries of the trace
 * at max_retry_depth). Either turns the remediation into an escalation awaiting approval.
 */
export function nextAction(input: GateInput): NextAction {
  const index = plannedStep(input);
  const step = input.steps[index];
  if (!step || step.type === 'escalate') return escalate(index, 'remediation_exhausted');
  if (input.remediations >= input.maxCascadeDepth) {
    return escalate(index, 'cascade_depth_exhausted', { remediation_count: input.remediations });
  }
  if (step.type === 'retry' && input.retries >= input.maxRetryDepth) {
    return escalate(index, 'retry_threshold_exceeded', { retry_count: input.retries });
  }
  return { type: step.type, stepIndex: index, requireApproval: input.requireApproval, escalationReason: null, metadata: {} };
}

/** The route's first fallback the chain has not tried, or null: its `model` is the one in use that failed. */
export function nextFallback(route: { fallbacks: readonly ModelRef[] }, tried: readonly string[]): ModelRef | null {
  const seen = new Set(tried);
  return route.fallbacks.find((m) => !seen.has(m.model)) ?? null;
}
