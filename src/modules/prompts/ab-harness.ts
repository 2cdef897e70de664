import type { ChatMessage } from '../../providers/types.js';
import type { EvalRuleService, EvalService } from '../evals/service.js';
import type { EvalVersion } from '../evals/schemas.js';
import { DEFAULT_MODEL, type Example, type ProviderSource } from './proposer.js';
import type { AbReport } from './schemas.js';

/** A candidate may lose at most this much average score on any eval rule and still pass. */
export const MAX_METRIC_DROP = 0.05;
const INPUT_PLACEHOLDER = /\{\{\s*input\s*\}\}/g;

/** A prompt with {{input}} is a template for the user turn; any other prompt is the system message before the input. */
export function replayMessages(prompt: string, input: string): ChatMessage[] {
  if (/\{\{\s*input\s*\}\}/.test(prompt)) return [{ role: 'user', content: prompt.replace(INPUT_PLACEHOLDER, () => input) }];
  return [
    { role: 'system', content: prompt },
    { role: 'user', content: input },
  ];
}

export interface Rule {
  id: string;
  metric: string;
  version: EvalVersion;
}

/** The scores of one replay: per rule, null when the rule could not score it. */
type ReplayScores = { score: number | null; passed: boolean | null }[];

const mean = (xs: number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 10_000) / 10_000);
/** A replay fails when any rule fails it. */
const failureRate = (replays: ReplayScores[]): number | null =>
  replays.length === 0 ? null : replays.filter((r) => r.some((s) => s.passed === false)).length / replays.length;

/**
 * The pass criteria (docs/control-loop.md): rules scored both sides, the candidate fails fewer
 * replays than the current prompt, and no rule's average drops by more than MAX_METRIC_DROP.
 */
export function decide(rules: readonly Rule[], before: ReplayScores[], after: ReplayScores[], samples: AbReport['samples']): AbReport {
  const metrics = rules.map((rule, i) => {
    const baseline = mean(before.flatMap((r) => (r[i]!.score === null ? [] : [r[i]!.score!])));
    const candidate = mean(after.flatMap((r) => (r[i]!.score === null ? [] : [r[i]!.score!])));
    return { metric: rule.metric, rule_id: rule.id, baseline: round(baseline), candidate: round(candidate), delta: baseline === null || candidate === null ? null : round(candidate - baseline) };
  });
  const failureBefore = failureRate(before);
  const failureAfter = failureRate(after);
  const report = { samples, metrics, failure_rate_before: round(failureBefore), failure_rate_after: round(failureAfter) };
  const fail = (reason: string): AbReport => ({ ...report, decision: 'fail', reason });
  if (rules.length === 0) return fail('the project has no enabled eval rules to score the replays with');
  if (samples.failing + samples.passing === 0) return fail("none of the cluster's traces could be replayed");
  if (metrics.every((m) => m.delta === null)) return fail('no eval rule could score both prompts');
  const dropped = metrics.find((m) => m.delta !== null && m.delta < -MAX_METRIC_DROP);
  if (dropped) return fail(`${dropped.metric} drops by ${-dropped.delta!} (more than ${MAX_METRIC_DROP})`);
  if (failureAfter === null || failureBefore === null || failureAfter >= failureBefore) {
    return fail(`the proposed prompt does not fail fewer replays (${failureBefore} before, ${failureAfter} after)`);
  }
  return { ...report, decision: 'pass', reason: `failure rate ${failureBefore} → ${failureAfter}, no eval rule drops by more than ${MAX_METRIC_DROP}` };
}

/**
 * The A/B test: replays the sampled traces' LLM calls with the current and the proposed prompt
 * through the tenant's OpenAI-compatible provider, and scores every output with the project's
 * enabled eval rules without storing the scores (EvalService.scoreItem).
 */
export class AbHarness {
  constructor(
    private readonly providers: ProviderSource,
    private readonly evalRules: Pick<EvalRuleService, 'list'>,
    private readonly evals: Pick<EvalService, 'getVersion' | 'scoreItem'>,
  ) {}

  async run(tenantId: string, projectId: string, prompts: { current: string; proposed: string }, failing: Example[], passing: Example[]): Promise<AbReport> {
    const rules = await this.rules(tenantId, projectId);
    const samples = { failing: failing.length, passing: passing.length };
    if (rules.length === 0) return decide(rules, [], [], samples);
    const { provider, defaultModel } = await this.providers.resolve(tenantId, 'openai');
    const replay = async (prompt: string, example: Example): Promise<ReplayScores> => {
      const answer = await provider.complete({ model: example.model || defaultModel || DEFAULT_MODEL, messages: replayMessages(prompt, example.input), temperature: 0 });
      return Promise.all(
        rules.map(async (rule) => {
          const s = await this.evals.scoreItem(tenantId, rule.version, { traceId: example.traceId, spanId: null, expected: null, output: answer.text });
          return { score: s.score, passed: s.passed };
        }),
      );
    };
    const all = [...failing, ...passing];
    const before = await Promise.all(all.map((e) => replay(prompts.current, e)));
    const after = await Promise.all(all.map((e) => replay(prompts.proposed, e)));
    return decide(rules, before, after, samples);
  }

  /** The project's enabled rules (its own and the tenant-wide ones), each at its current version. */
  private async rules(tenantId: string, projectId: string): Promise<Rule[]> {
    const { eval_rules } = await this.evalRules.list(tenantId, { limit: 1000, enabled: 'true' });
    const mine = eval_rules.filter((r) => r.project_id === null || r.project_id === projectId);
    return Promise.all(mine.map(async (r) => ({ id: r.id, metric: r.metric_name, version: await this.evals.getVersion(tenantId, r.current_version_id) })));
  }
}
