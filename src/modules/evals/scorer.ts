import { AppError, notFound } from '../../platform/errors.js';
import { CheckInputError, runBuiltinCheck } from '../../providers/builtin-checks.js';
import { ProviderError, type LlmProvider } from '../../providers/types.js';
import { computeCost, findPrice, type PriceBook } from '../pricing/service.js';
import type { TraceService } from '../traces/service.js';
import type { TraceDetail } from '../traces/schemas.js';
import type { BuiltinConfig, EvalConfig, JudgeConfig } from './config.js';
import { JUDGE_SYSTEM, presetTemplate, renderTemplate, type JudgeMaterial } from './presets.js';
import type { EvalOutcome } from './repo.js';
import { TraceBatchLoader } from './trace-loader.js';

/** Where judges come from: the tenant's LLM connection, else the operator's (llm-connections module). */
export interface JudgeSource {
  resolve(tenantId: string, provider: 'openai' | 'anthropic'): Promise<{ provider: LlmProvider; defaultModel: string | null }>;
}

export interface ScoreTarget {
  traceId: string;
  /** Score this span's input and output instead of the trace's. */
  spanId?: string | null;
  /** Expected output given by the caller (a dataset item); else the trace's metadata.expected. */
  expected?: string | null;
  /** Score this output instead of the trace's or span's own (a remediation's, an A/B candidate's). */
  output?: string | null;
}

const DEFAULT_JUDGE_MODEL = { openai: 'gpt-4o-mini', anthropic: 'claude-3-5-haiku-latest' } as const;
// Bounds the judge prompt (and its cost) whatever a trace carries.
const MAX_MATERIAL_CHARS = 50_000;

/**
 * Scores one trace with one configuration. Everything that can never succeed on a retry (the
 * provider refused or answered nonsense, the check cannot apply, the trace is gone) comes back as
 * an outcome with `error`; only store failures are thrown, so the caller's job retries those.
 */
export class EvalScorer {
  private readonly loader: TraceBatchLoader;

  constructor(
    private readonly traces: Pick<TraceService, 'get' | 'findMany'>,
    private readonly judges: JudgeSource,
    private readonly prices: PriceBook,
  ) {
    this.loader = new TraceBatchLoader(traces);
  }

  async score(tenantId: string, config: EvalConfig, threshold: number, target: ScoreTarget): Promise<EvalOutcome> {
    try {
      const material = materialOf(await this.read(tenantId, config, target), target);
      return config.provider === 'builtin'
        ? scoreBuiltin(config, threshold, material)
        : await this.scoreWithJudge(tenantId, config, threshold, material);
    } catch (err) {
      const reason = failureReason(err);
      if (reason === undefined) throw err;
      return { ...EMPTY_OUTCOME, error: reason };
    }
  }

  /**
   * Refuses up front (422) a judge the tenant has no credentials for, rather than storing an
   * evaluation that can only fail: neither an LLM connection of that vendor nor the server's key.
   */
  async requireJudge(tenantId: string, config: EvalConfig): Promise<void> {
    if (config.provider === 'builtin') return;
    try {
      await this.judges.resolve(tenantId, config.provider);
    } catch (err) {
      if (err instanceof ProviderError && err.failure === 'auth') throw new AppError(422, 'eval.no_llm_credentials', err.message);
      throw err;
    }
  }

  /** A builtin check of a whole trace needs only the trace row; judges may need its spans (context). */
  private async read(tenantId: string, config: EvalConfig, target: ScoreTarget): Promise<TraceDetail> {
    if (config.provider !== 'builtin' || target.spanId) return this.traces.get(tenantId, target.traceId);
    const trace = await this.loader.load(tenantId, target.traceId);
    if (!trace) throw notFound('trace');
    return { ...trace, otel_trace_id: null, control_loop_depth: 0, spans: [] };
  }

  private async scoreWithJudge(tenantId: string, config: JudgeConfig, threshold: number, material: JudgeMaterial): Promise<EvalOutcome> {
    const { provider, defaultModel } = await this.judges.resolve(tenantId, config.provider);
    const model = config.model ?? defaultModel ?? DEFAULT_JUDGE_MODEL[config.provider];
    const template = config.prompt ?? (config.preset === 'custom' ? '' : presetTemplate(config.preset));
    const answer = await provider.judge({ model, system: JUDGE_SYSTEM, prompt: renderTemplate(template, material) });
    const overrides = await this.prices.forTenant(tenantId);
    const { promptTokens, completionTokens } = answer.usage;
    return {
      score: answer.verdict.score,
      // The threshold decides, not the judge's own verdict: rules and dataset runs compare like with like.
      passed: answer.verdict.score >= threshold,
      reasoning: answer.verdict.reasoning,
      error: null,
      judge_model: answer.model,
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      cost: computeCost(findPrice(answer.model, overrides) ?? findPrice(model, overrides), promptTokens, completionTokens),
      latency_ms: Math.round(answer.latencyMs),
    };
  }
}

/** No score and no usage: the base of an outcome that ends in an error. */
export const EMPTY_OUTCOME: EvalOutcome = {
  score: null,
  passed: null,
  reasoning: null,
  error: null,
  judge_model: null,
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  latency_ms: null,
};

function scoreBuiltin(config: BuiltinConfig, threshold: number, material: JudgeMaterial): EvalOutcome {
  const started = performance.now();
  const { score, reasoning } = runBuiltinCheck(config.preset, { output: material.output, expected: material.expected, params: config.params ?? {} });
  return { ...EMPTY_OUTCOME, score, passed: score >= threshold, reasoning, latency_ms: Math.round(performance.now() - started) };
}

function failureReason(err: unknown): string | undefined {
  if (err instanceof ProviderError) return `${err.failure}: ${err.message}`;
  if (err instanceof CheckInputError) return err.message;
  if (err instanceof AppError && err.status === 404) return 'the trace (or span) no longer exists';
  return undefined;
}

function materialOf(trace: TraceDetail, target: ScoreTarget): JudgeMaterial {
  let { input, output } = trace;
  if (target.spanId) {
    const span = trace.spans.find((s) => s.id === target.spanId);
    if (!span) throw new AppError(404, 'not_found', 'span not found in its trace');
    ({ input, output } = span);
  }
  return {
    input: bounded(input),
    output: bounded(target.output ?? output),
    expected: nullableBounded(target.expected ?? asText(trace.metadata.expected)),
    context: nullableBounded(asText(trace.metadata.context) ?? retrievedContext(trace)),
  };
}

/** What retrieval spans returned: the context a RAG answer should be grounded in. */
function retrievedContext(trace: TraceDetail): string | null {
  const retrieved = trace.spans.filter((s) => s.type === 'retrieval' && s.output !== '').map((s) => s.output);
  return retrieved.length > 0 ? retrieved.join('\n\n') : null;
}

function asText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join('\n\n');
  return JSON.stringify(value);
}

const bounded = (text: string): string =>
  text.length <= MAX_MATERIAL_CHARS ? text : `${text.slice(0, MAX_MATERIAL_CHARS)}\n[truncated: ${text.length - MAX_MATERIAL_CHARS} more characters]`;
const nullableBounded = (text: string | null): string | null => (text === null ? null : bounded(text));
