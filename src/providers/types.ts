/**
 * What every LLM provider adapter offers the modules (evals, datasets, control loop, search).
 * Adapters know no module: they take plain requests and return plain results, and report their
 * own usage and latency so the caller can price and record the call.
 */

export interface Usage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A judge's structured answer: score in [0, 1], its own pass verdict, and why. */
export interface JudgeVerdict {
  score: number;
  passed: boolean;
  reasoning: string;
}

export interface JudgeRequest {
  model: string;
  /** Instructions to the judge; the adapter adds how to answer (JSON schema / tool call). */
  system: string;
  /** The rendered evaluation prompt (template over input, output, expected, context). */
  prompt: string;
}

export interface JudgeResult {
  verdict: JudgeVerdict;
  usage: Usage;
  /** The model that answered, as the vendor reports it. */
  model: string;
  latencyMs: number;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
}

export interface CompletionResult {
  text: string;
  usage: Usage;
  model: string;
  latencyMs: number;
}

export interface EmbeddingResult {
  vectors: number[][];
  usage: Usage;
  model: string;
  latencyMs: number;
}

export interface LlmProvider {
  readonly name: 'openai' | 'anthropic' | 'builtin';
  judge(request: JudgeRequest): Promise<JudgeResult>;
  complete(request: CompletionRequest): Promise<CompletionResult>;
  embed(model: string, texts: string[]): Promise<EmbeddingResult>;
}

/**
 * Why a provider call failed, for the evaluation's `error` and for retry decisions upstream:
 * the SDK has already retried 429/5xx with backoff before `rate_limited` or `server_error` surface.
 */
export type ProviderFailure =
  | 'timeout'
  | 'rate_limited'
  | 'server_error'
  | 'auth'
  | 'bad_request'
  | 'unreachable'
  | 'blocked_url'
  | 'malformed_output'
  | 'unsupported';

export class ProviderError extends Error {
  constructor(
    readonly failure: ProviderFailure,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
