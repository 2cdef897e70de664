import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';
import { checkBounds } from '../traces/schemas.js';

export const STEP_TYPES = ['retry', 'fallback_model', 'prompt_modification', 'escalate'] as const;
export type StepType = (typeof STEP_TYPES)[number];
/** The action types that re-run the span; the cascade gate counts these. */
export const REMEDIATIONS = ['retry', 'fallback_model', 'prompt_modification'] as const;
export const ACTION_STATUSES = ['pending', 'pending_approval', 'approved', 'running', 'executed', 'failed', 'rejected'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];
export const ESCALATION_REASONS = ['cascade_depth_exhausted', 'retry_threshold_exceeded', 'remediation_exhausted'] as const;
export type EscalationReason = (typeof ESCALATION_REASONS)[number];

const name = storableText(z.string().trim().min(1).max(200));
const modelRef = z.object({ provider: z.enum(['openai', 'anthropic']), model: storableText(z.string().min(1).max(200)) }).strict();
export type ModelRef = z.infer<typeof modelRef>;

const routeFields = {
  name,
  project_id: z.guid().nullable().optional().describe('null or absent: usable by every project'),
  model: modelRef,
  fallbacks: z.array(modelRef).max(10).optional().describe('tried in order by fallback_model steps (default none)'),
};
export const createRouteBody = z.object(routeFields).strict();
export type CreateRoute = z.infer<typeof createRouteBody>;
export const updateRouteBody = z.object(routeFields).partial().strict();
export type UpdateRoute = z.infer<typeof updateRouteBody>;

export const modelRoute = z
  .object({
    id: z.guid(),
    name: z.string(),
    project_id: z.guid().nullable(),
    model: modelRef,
    fallbacks: z.array(modelRef),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('ModelRoute');
export type ModelRoute = z.infer<typeof modelRoute>;
export const modelRouteList = z.object({ model_routes: z.array(modelRoute), has_more: z.boolean(), next_cursor: z.string().nullable() }).describe('ModelRouteList');

const trigger = z
  .object({
    failure_types: z.array(storableText(z.string().min(1).max(100))).min(1).max(20).optional().describe('a failure cluster of one of these types holds the trace (RemediationRegression excluded)'),
    cluster_signature: storableText(z.string().min(1).max(100)).optional().describe('the failure cluster of this signature holds the trace'),
    eval_rule_id: z.guid().optional().describe("the rule's fresh evaluation of the trace scored below its threshold"),
  })
  .strict()
  .refine((t) => Boolean(t.failure_types || t.cluster_signature || t.eval_rule_id), { message: 'needs failure_types, cluster_signature or eval_rule_id' })
  .describe('PolicyTrigger: any condition given starts a chain');
export type PolicyTrigger = z.infer<typeof trigger>;

const step = z.discriminatedUnion('type', [
  z.object({ type: z.literal('retry') }).strict(),
  z.object({ type: z.literal('fallback_model'), model_route_id: z.guid() }).strict(),
  z.object({ type: z.literal('prompt_modification'), instruction: storableText(z.string().min(1).max(4_000)) }).strict(),
  z.object({ type: z.literal('escalate') }).strict(),
]);
export type PolicyStep = z.infer<typeof step>;

const policyFields = {
  name,
  project_id: z.guid(),
  enabled: z.boolean().optional().describe('default true'),
  trigger,
  steps: z
    .array(step)
    .min(1)
    .max(4)
    .refine((s) => new Set(s.map((x) => x.type)).size === s.length, { message: 'each step type at most once' })
    .describe('tried in order; see docs/control-loop.md for how a chain moves between them'),
  max_retry_depth: z.number().int().min(1).max(10).optional().describe('retries of a trace before the next becomes an escalation (default 3)'),
  max_cascade_depth: z.number().int().min(1).max(20).optional().describe('retry + fallback_model + prompt_modification actions of a trace, all policies (default 5)'),
  require_approval: z.boolean().optional().describe('remediations wait for an owner before they run (default false)'),
};
export const createPolicyBody = z.object(policyFields).strict();
export type CreatePolicy = z.infer<typeof createPolicyBody>;
export const updatePolicyBody = z.object(policyFields).partial().strict();
export type UpdatePolicy = z.infer<typeof updatePolicyBody>;

export const policy = z
  .object({
    id: z.guid(),
    name: z.string(),
    project_id: z.guid(),
    enabled: z.boolean(),
    trigger: z.record(z.string(), z.unknown()),
    steps: z.array(z.record(z.string(), z.unknown())),
    max_retry_depth: z.number().int(),
    max_cascade_depth: z.number().int(),
    require_approval: z.boolean(),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('Policy');
export type Policy = z.infer<typeof policy>;
export const policyList = z.object({ policies: z.array(policy), has_more: z.boolean(), next_cursor: z.string().nullable() }).describe('PolicyList');
export const listConfigQuery = z.object(pageQuery);

export const controlAction = z
  .object({
    id: z.guid(),
    project_id: z.guid(),
    trace_id: z.guid(),
    span_id: z.guid().nullable().describe('the LLM span re-run'),
    policy_id: z.guid(),
    chain_id: z.guid().describe("the chain's first action: one chain per policy and trace"),
    parent_id: z.guid().nullable().describe('the action whose failure caused this one'),
    type: z.enum(STEP_TYPES),
    status: z.enum(ACTION_STATUSES),
    require_approval: z.boolean(),
    escalation_reason: z.enum(ESCALATION_REASONS).nullable(),
    metadata: z.record(z.string(), z.unknown()).describe('retry_count on a retry_threshold_exceeded escalation; outcome once judged'),
    input: z.string().nullable(),
    output: z.string().nullable(),
    model: z.string().nullable(),
    prompt_tokens: z.number().int().nullable(),
    completion_tokens: z.number().int().nullable(),
    latency_ms: z.number().int().nullable(),
    cost: z.number().nullable().describe('USD, from the price table (tenant overrides first)'),
    error: z.string().nullable(),
    created_at: isoDate,
    executed_at: isoDate.nullable(),
    decided_by: z.string().nullable(),
    decided_at: isoDate.nullable(),
  })
  .describe('ControlAction');
export type ControlAction = z.infer<typeof controlAction>;

const instant = z.iso.datetime({ offset: true });
export const listActionsQuery = z
  .object({
    ...pageQuery,
    from: instant.optional().describe('inclusive lower bound of created_at'),
    to: instant.optional().describe('inclusive upper bound of created_at; >= from'),
    status: z.enum(ACTION_STATUSES).optional(),
    type: z.enum(STEP_TYPES).optional(),
    trace_id: z.guid().transform((s) => s.toLowerCase()).optional(),
  })
  .superRefine(checkBounds);
export type ListActionsQuery = z.infer<typeof listActionsQuery>;
export const controlActionList = z
  .object({ actions: z.array(controlAction), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('ControlActionList');

export const diffPending = z.object({ status: z.literal('pending') }).describe('RemediationDiffPending');
export const remediationDiff = z
  .object({
    token_length_delta: z.number().int().describe('completion tokens of the remediation minus those of the original span'),
    latency_delta_ms: z.number().int().describe('remediation latency minus original span latency'),
    embedding_similarity: z.number().describe('cosine similarity of the two outputs (tenant embedder, else the builtin one)'),
    embedding_model: z.string(),
    eval_deltas: z.array(
      z.object({
        rule_id: z.guid().nullable(),
        metric_name: z.string(),
        original_score: z.number().nullable(),
        remediated_score: z.number().nullable(),
        delta: z.number().nullable(),
      }),
    ),
  })
  .describe('RemediationDiff');
export type RemediationDiff = z.infer<typeof remediationDiff>;

export const projectMetricQuery = z.object({ metric: z.enum(['retry_cap_hit']), window: z.enum(['7d', '30d']) });
export const projectMetric = z
  .object({ metric: z.literal('retry_cap_hit'), value: z.number().int(), window: z.enum(['7d', '30d']) })
  .describe('ProjectMetric');

/** Data of a `control` job: the action and its tenant. */
export const controlJob = z.object({ tenant_id: z.guid(), action_id: z.guid() });
