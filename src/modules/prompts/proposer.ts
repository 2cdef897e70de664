import { z } from 'zod';
import { ProviderError, type LlmProvider } from '../../providers/types.js';
import type { FailureCluster } from '../failures/schemas.js';
import type { TraceDetail } from '../traces/schemas.js';
import { MAX_PROMPT_CHARS } from './schemas.js';

export const DEFAULT_MODEL = 'gpt-4o-mini';
// Bounds the proposal request whatever the failing traces carry.
const MAX_EXAMPLE_CHARS = 2_000;

export interface ProviderSource {
  resolve(tenantId: string, provider: 'openai'): Promise<{ provider: LlmProvider; defaultModel: string | null }>;
}

/** What one failing trace shows the proposer and the A/B harness: the LLM call that ran the prompt. */
export interface Example {
  traceId: string;
  input: string;
  output: string;
  error: string | null;
  model: string;
}

export const proposal = z.object({
  proposed_prompt: z.string().trim().min(1).max(MAX_PROMPT_CHARS),
  rationale: z.string().trim().min(1).max(1_000),
});
export type Proposal = z.infer<typeof proposal>;

/** The span that ran the prompt: the one naming it in metadata, else the first LLM span, else the trace itself. */
export function exampleOf(trace: TraceDetail, promptName: string): Example {
  const span =
    trace.spans.find((s) => s.metadata.prompt_name === promptName) ?? trace.spans.find((s) => s.type === 'llm') ?? null;
  const source = span ?? trace;
  return { traceId: trace.id, input: source.input, output: source.output, error: source.error, model: source.model };
}

const clip = (text: string) => (text.length > MAX_EXAMPLE_CHARS ? `${text.slice(0, MAX_EXAMPLE_CHARS)}…` : text);

const SYSTEM =
  'You improve the prompts of LLM applications. You get the current prompt and examples of calls that failed with it. ' +
  'Answer with one JSON object and nothing else: {"proposed_prompt": string, "rationale": string}. proposed_prompt is the ' +
  'complete improved prompt (keep placeholders such as {{input}} as they are); rationale is one sentence saying why it fixes the failures.';

function request(current: string, cluster: FailureCluster, examples: readonly Example[]): string {
  const shown = examples.map(
    (e, i) => `Example ${i + 1}\n<input>${clip(e.input)}</input>\n<output>${clip(e.output)}</output>\n<error>${clip(e.error ?? '')}</error>`,
  );
  return [`<current_prompt>\n${current}\n</current_prompt>`, `Failure (${cluster.type}): ${cluster.sample_error ?? ''}`, ...shown].join('\n\n');
}

/** A JSON object in the answer, fenced or not: models wrap JSON in prose or code fences. */
export function parseProposal(text: string): Proposal | null {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return null;
  try {
    const parsed = proposal.safeParse(JSON.parse(text.slice(start, end + 1)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Has the tenant's OpenAI-compatible provider write an improved prompt and its rationale. A
 * malformed answer is asked for once more; a second one is final (`null`: the A/B test then fails
 * for want of a candidate). Transport failures are thrown, so the job retries them.
 */
export class PromptProposer {
  constructor(private readonly providers: ProviderSource) {}

  async propose(tenantId: string, current: string, cluster: FailureCluster, examples: readonly Example[]): Promise<Proposal | null> {
    const { provider, defaultModel } = await this.providers.resolve(tenantId, 'openai');
    const messages = [
      { role: 'system' as const, content: SYSTEM },
      { role: 'user' as const, content: request(current, cluster, examples) },
    ];
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const answer = await provider.complete({ model: defaultModel ?? DEFAULT_MODEL, messages, temperature: 0 });
        const parsed = parseProposal(answer.text);
        if (parsed) return parsed;
      } catch (err) {
        if (!(err instanceof ProviderError && err.failure === 'malformed_output')) throw err;
      }
    }
    return null;
  }
}
