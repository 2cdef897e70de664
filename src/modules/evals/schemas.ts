import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';
import { checkBounds, traceFilterShape } from '../traces/schemas.js';
import { evalConfig } from './config.js';

export const EVAL_STATUSES = ['pending', 'running', 'completed', 'failed'] as const;
export type EvalStatus = (typeof EVAL_STATUSES)[number];

const instant = z.iso.datetime({ offset: true });
const metricName = storableText(z.string().trim().min(1).max(200));
const unitInterval = z.number().min(0).max(1);

export const triggerEvalBody = z
  .object({
    trace_id: z.guid().transform((s) => s.toLowerCase()),
    metric_name: metricName,
    config: evalConfig,
  })
  .strict();
export type TriggerEval = z.infer<typeof triggerEvalBody>;

export const evalTriggered = z
  .object({ eval_id: z.guid(), status: z.enum(EVAL_STATUSES) })
  .describe('EvaluationTriggerResponse');

export const evaluation = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    trace_id: z.guid(),
    project_id: z.guid(),
    metric_name: z.string(),
    config: z.record(z.string(), z.unknown()),
    threshold: z.number().describe('passed = score >= threshold'),
    status: z.enum(EVAL_STATUSES),
    score: z.number().nullable(),
    passed: z.boolean().nullable(),
    reasoning: z.string().nullable(),
    error: z.string().nullable().describe('why a failed evaluation failed'),
    rule_id: z.guid().nullable().describe('the eval rule that scored the trace; null when triggered through POST /v1/eval'),
    eval_version_id: z.guid().nullable(),
    judge_model: z.string().nullable().describe('the model that answered, as the vendor reported it; null for builtin checks'),
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    cost: z.number().describe('USD, from the price table (tenant overrides first)'),
    latency_ms: z.number().int().nullable(),
    context: z.enum(['fresh', 'remediation']),
    source_action_id: z.guid().nullable(),
    original_evaluation_id: z.guid().nullable(),
    scored_output: z.string().nullable().describe("remediation: the output that was scored instead of the trace's own"),
    created_at: isoDate,
    started_at: isoDate.nullable(),
    completed_at: isoDate.nullable(),
  })
  .describe('Evaluation');
export type Evaluation = z.infer<typeof evaluation>;

/** The compare query's two windows, each named by its own prefix (the lists use the trace list's checkBounds). */
function checkWindow(query: { from: string; to: string }, ctx: z.RefinementCtx, prefix: string): void {
  if (Date.parse(query.from) > Date.parse(query.to)) {
    ctx.addIssue({ code: 'custom', path: [`${prefix}to`], message: `must be >= ${prefix}from` });
  }
}

export const listEvalsQuery = z
  .object({
    ...pageQuery,
    trace_id: z.guid().transform((s) => s.toLowerCase()).optional(),
    metric_name: z.string().min(1).max(200).optional(),
    status: z.enum(EVAL_STATUSES).optional(),
    project_id: z.guid().optional(),
    rule_id: z.guid().optional(),
    source_action_id: z.guid().optional().describe('re-scores caused by this control action'),
    context: z.enum(['fresh', 'remediation']).optional(),
    from: instant.optional().describe('inclusive lower bound of created_at'),
    to: instant.optional().describe('inclusive upper bound of created_at; >= from'),
  })
  .superRefine(checkBounds);
export type ListEvalsQuery = z.infer<typeof listEvalsQuery>;

export const evalList = z
  .object({ evals: z.array(evaluation), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('EvaluationList');

export const compareQuery = z
  .object({
    metric: z.string().min(1).max(200),
    project_id: z.guid().optional(),
    baseline_from: instant,
    baseline_to: instant,
    candidate_from: instant,
    candidate_to: instant,
  })
  .superRefine((q, ctx) => {
    checkWindow({ from: q.baseline_from, to: q.baseline_to }, ctx, 'baseline_');
    checkWindow({ from: q.candidate_from, to: q.candidate_to }, ctx, 'candidate_');
  });
export type CompareQuery = z.infer<typeof compareQuery>;

const windowStats = z.object({
  avg_score: z.number().nullable().describe('null when the window has no completed evaluation'),
  count: z.number().int(),
  pass_rate: z.number().nullable().describe('share of passed evaluations, 0..1; null when the window has none'),
});
export type WindowStats = z.infer<typeof windowStats>;

export const evalComparison = z
  .object({
    metric: z.string(),
    baseline: windowStats,
    candidate: windowStats,
    delta: z.object({
      avg_score: z.number().nullable().describe('candidate - baseline; null when either window is empty'),
      pass_rate: z.number().nullable(),
    }),
  })
  .describe('EvalComparison');
export type EvalComparison = z.infer<typeof evalComparison>;

/**
 * The trace list's filters an eval rule can use; the project and time are the rule's own. The
 * full-text search (q) is not one of them: a rule's filter is not a search.
 */
const { project_id: _project, from: _from, to: _to, q: _q, ...ruleFilterFields } = traceFilterShape;
export const ruleFilter = z
  .object(ruleFilterFields)
  .strict()
  .superRefine((f, ctx) => {
    checkBounds(f, ctx);
    if ((f.tag_key === undefined) !== (f.tag_value === undefined)) {
      ctx.addIssue({ code: 'custom', path: [f.tag_key === undefined ? 'tag_key' : 'tag_value'], message: 'tag_key and tag_value come together' });
    }
  })
  .describe('Filters of GET /v1/traces that a trace must match');
export type RuleFilter = z.infer<typeof ruleFilter>;

const ruleFields = {
  name: storableText(z.string().trim().min(1).max(200)),
  metric_name: metricName,
  project_id: z.guid().nullable().optional().describe('only traces of this project; null or absent = every project'),
  filter: ruleFilter.optional(),
  sampling_rate: unitInterval.optional().describe('share of matching traces scored, chosen by trace id (default 1)'),
  config: evalConfig,
  threshold: unitInterval.optional().describe('passed = score >= threshold (default 0.5)'),
  min_score_drop: z.number().min(0).max(1).optional().describe('a remediation regression is reported only when the score drops by more than this (default 0)'),
  enabled: z.boolean().optional().describe('default true'),
};

export const createRuleBody = z.object(ruleFields).strict();
export type CreateRule = z.infer<typeof createRuleBody>;
export const updateRuleBody = z.object(ruleFields).partial().strict();
export type UpdateRule = z.infer<typeof updateRuleBody>;

const ruleSnapshot = {
  name: z.string(),
  metric_name: z.string(),
  project_id: z.guid().nullable(),
  filter: z.record(z.string(), z.unknown()),
  sampling_rate: z.number(),
  config: z.record(z.string(), z.unknown()),
  threshold: z.number(),
  min_score_drop: z.number(),
  enabled: z.boolean(),
};

export const evalRule = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    ...ruleSnapshot,
    current_version_id: z.guid(),
    version: z.number().int().describe('1 at creation, +1 per update'),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('EvalRule');
export type EvalRule = z.infer<typeof evalRule>;

export const evalRuleList = z
  .object({ eval_rules: z.array(evalRule), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('EvalRuleList');
export const listRulesQuery = z.object({ ...pageQuery, enabled: z.enum(['true', 'false']).optional() });

export const evalVersion = z
  .object({ id: z.guid(), tenant_id: z.guid(), rule_id: z.guid(), version: z.number().int(), ...ruleSnapshot, created_at: isoDate })
  .describe('EvalVersion: an immutable snapshot of an eval rule');
export type EvalVersion = z.infer<typeof evalVersion>;

/** One dataset item scored by an eval version (EvalService.scoreItem); provider failures are in `error`, not thrown. */
export interface ItemScore {
  score: number | null;
  passed: boolean | null;
  reasoning: string | null;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  latency_ms: number | null;
}

/** Data of an `evals` job: the evaluation and its tenant. */
export const evalJob = z.object({ tenant_id: z.guid(), eval_id: z.guid() });
