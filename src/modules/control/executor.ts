import { ProviderError, type ChatMessage, type LlmProvider } from '../../providers/types.js';
import type { EvalService } from '../evals/service.js';
import { computeCost, findPrice, type PriceBook } from '../pricing/service.js';
import type { Span } from '../traces/schemas.js';
import type { TraceService } from '../traces/service.js';
import type { ActionRow, ControlActionRepository, ExecutionOutcome } from './actions-repo.js';
import type { ControlConfigService } from './config-service.js';

// A running action this old has lost its worker (a provider call is bounded far below this).
export const RUNNING_GRACE_MS = 5 * 60_000;

export interface ProviderSource {
  resolve(tenantId: string, provider: 'openai' | 'anthropic'): Promise<{ provider: LlmProvider; defaultModel: string | null }>;
}

/** The span a remediation re-runs: the trace's LLM span with an error, else its last LLM span. */
export function failingSpan(spans: readonly Span[]): Span | undefined {
  const llm = spans.filter((s) => s.type === 'llm').sort((a, b) => a.start_time.localeCompare(b.start_time));
  return llm.find((s) => s.error !== null) ?? llm[llm.length - 1];
}

/**
 * The span's conversation: its input when that is a JSON array of {role, content} messages, else
 * one user message. The system prompt is `metadata.system_prompt` when the span carries one
 * (SDKs that keep it apart from the input), else the conversation's first system message.
 */
export function conversationOf(span: Span): { system: string | null; turns: ChatMessage[] } {
  let turns: ChatMessage[] = [{ role: 'user', content: span.input }];
  try {
    const parsed: unknown = JSON.parse(span.input);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every(isMessage)) turns = parsed as ChatMessage[];
  } catch {
    // plain text input: one user turn
  }
  const fromMetadata = typeof span.metadata.system_prompt === 'string' ? span.metadata.system_prompt : null;
  const head = turns[0];
  const first = head?.role === 'system' ? head.content : null;
  return { system: fromMetadata ?? first, turns: first === null ? turns : turns.slice(1) };
}

const isMessage = (m: unknown): boolean =>
  typeof m === 'object' && m !== null && ['system', 'user', 'assistant'].includes((m as ChatMessage).role) && typeof (m as ChatMessage).content === 'string';

/** The `control` job: re-runs the failing LLM span of the action's trace as the action says. */
export class ControlExecutor {
  constructor(
    private readonly repo: ControlActionRepository,
    private readonly config: Pick<ControlConfigService, 'policyRow'>,
    private readonly traces: Pick<TraceService, 'get'>,
    private readonly providers: ProviderSource,
    private readonly prices: PriceBook,
    private readonly evals: Pick<EvalService, 'rescoreRemediation'>,
  ) {}

  async process(actionId: string, lastAttempt: boolean): Promise<'executed' | 'failed' | 'skipped'> {
    const action = await this.repo.claim(actionId, new Date(Date.now() - RUNNING_GRACE_MS));
    if (!action) return 'skipped';
    let outcome: ExecutionOutcome;
    try {
      outcome = await this.run(action);
    } catch (err) {
      if (!lastAttempt) {
        await this.repo.release(actionId).catch(() => {});
        throw err;
      }
      outcome = { ...EMPTY, error: `internal error: ${(err as Error).message}` };
    }
    await this.repo.finish(actionId, outcome);
    if (outcome.error !== null) return 'failed';
    // Re-scored after the action is stored as executed; the scan waits for `rescored` before judging.
    const rescores = await this.evals
      .rescoreRemediation(action.tenant_id, { traceId: action.trace_id, sourceActionId: action.id, output: outcome.output ?? '' })
      .then((ids) => ({ rescored: true, rescore_ids: ids }), (err: Error) => ({ rescored: true, rescore_error: err.message }));
    await this.repo.mergeMetadata(actionId, rescores);
    return 'executed';
  }

  /** Provider refusals come back as a failed outcome (the chain moves on); store errors are thrown. */
  private async run(action: ActionRow): Promise<ExecutionOutcome> {
    const trace = await this.traces.get(action.tenant_id, action.trace_id);
    const span = failingSpan(trace.spans);
    if (!span) return { ...EMPTY, error: 'the trace has no llm span to re-run' };
    const { system, turns } = conversationOf(span);
    const systemPrompt = action.type === 'prompt_modification' ? await this.modifiedPrompt(action, system) : system;
    const messages: ChatMessage[] = systemPrompt === null ? turns : [{ role: 'system', content: systemPrompt }, ...turns];
    const vendor = action.provider ?? 'openai';
    const input = JSON.stringify(messages);
    try {
      const { provider, defaultModel } = await this.providers.resolve(action.tenant_id, vendor);
      const model = action.model ?? (span.model || defaultModel || 'gpt-4o-mini');
      const result = await provider.complete({ model, messages });
      const price = findPrice(result.model, await this.prices.forTenant(action.tenant_id));
      return {
        span_id: span.id,
        input,
        output: result.text,
        model: result.model,
        prompt_tokens: result.usage.promptTokens,
        completion_tokens: result.usage.completionTokens,
        latency_ms: Math.round(result.latencyMs),
        cost: computeCost(price, result.usage.promptTokens, result.usage.completionTokens),
        error: null,
      };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      return { ...EMPTY, span_id: span.id, input, error: `${err.failure}: ${err.message}` };
    }
  }

  private async modifiedPrompt(action: ActionRow, system: string | null): Promise<string> {
    const policy = await this.config.policyRow(action.tenant_id, action.policy_id);
    const step = policy.steps[action.step_index];
    const instruction = step?.type === 'prompt_modification' ? step.instruction : '';
    return system ? `${system}\n\n${instruction}` : instruction;
  }
}

const EMPTY: ExecutionOutcome = {
  span_id: null,
  input: null,
  output: null,
  model: null,
  prompt_tokens: 0,
  completion_tokens: 0,
  latency_ms: null,
  cost: 0,
  error: null,
};
