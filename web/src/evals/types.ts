import type { Ok } from '../api/client';
import type { paths } from '../api/schema';

export type EvalRule = Ok<'/v1/eval-rules'>['eval_rules'][number];
export type EvalVersion = Ok<'/v1/eval-versions/{id}'>;
export type RuleBody = NonNullable<paths['/v1/eval-rules']['post']['requestBody']>['content']['application/json'];
export type EvalConfig = RuleBody['config'];
export type RuleFilter = NonNullable<RuleBody['filter']>;
export type Provider = EvalConfig['provider'];
export type BuiltinPreset = Extract<EvalConfig, { provider: 'builtin' }>['preset'];
export type JudgePreset = Extract<EvalConfig, { provider: 'openai' | 'anthropic' }>['preset'];

export type EvaluationList = Ok<'/v1/evals'>;
export type Evaluation = EvaluationList['evals'][number];
export type EvalQuery = NonNullable<paths['/v1/evals']['get']['parameters']['query']>;
export type EvalStatus = Evaluation['status'];
export type Comparison = Ok<'/v1/eval/compare'>;

export type Dataset = Ok<'/v1/datasets'>['datasets'][number];
export type DatasetItem = Ok<'/v1/datasets/{id}/items'>['items'][number];
export type ItemBody = NonNullable<paths['/v1/datasets/{id}/items']['post']['requestBody']>['content']['application/json'];
export type ItemLabel = NonNullable<DatasetItem['label']>;
export type EvalRun = Ok<'/v1/datasets/{id}/runs'>['runs'][number];
export type RunDetail = Ok<'/v1/datasets/{id}/runs/{run_id}'>;

/** Every evaluator the API offers (the records are exhaustive over the generated enums). */
export const BUILTIN_PRESETS: Record<BuiltinPreset, string> = {
  exact_match: 'Exact match',
  contains: 'Contains',
  regex: 'Regular expression',
  json_valid: 'Valid JSON',
  json_schema: 'JSON Schema',
  levenshtein: 'Levenshtein similarity',
  length_between: 'Length between',
};
export const JUDGE_PRESETS: Record<JudgePreset, string> = {
  correctness: 'Correctness',
  relevance: 'Relevance',
  hallucination: 'Hallucination',
  toxicity: 'Toxicity',
  helpfulness: 'Helpfulness',
  conciseness: 'Conciseness',
  custom: 'Custom prompt',
};
export const PROVIDERS: Record<Provider, string> = { builtin: 'Builtin check (no LLM)', openai: 'OpenAI judge', anthropic: 'Anthropic judge' };
export const EVAL_STATUSES: Record<EvalStatus, string> = { pending: 'Pending', running: 'Running', completed: 'Completed', failed: 'Failed' };
export const RUN_DONE: ReadonlySet<EvalRun['status']> = new Set(['completed', 'failed']);

/** The evaluator of a rule or version, in one line. */
export function describeConfig(config: Record<string, unknown>): string {
  const provider = String(config.provider);
  const preset = String(config.preset);
  if (provider === 'builtin') return `builtin · ${BUILTIN_PRESETS[preset as BuiltinPreset] ?? preset}`;
  return `${provider}${typeof config.model === 'string' ? ` ${config.model}` : ''} · ${JUDGE_PRESETS[preset as JudgePreset] ?? preset}`;
}

export const statusClass = (status: EvalStatus): string => (status === 'completed' ? 'ok' : status === 'failed' ? 'error' : 'neutral');
