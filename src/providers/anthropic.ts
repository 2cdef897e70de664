import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError } from '@anthropic-ai/sdk';
import { malformed, timed, toProviderError, toVerdict, VERDICT_JSON_SCHEMA, type AdapterOptions } from './common.js';
import {
  ProviderError,
  type CompletionRequest,
  type CompletionResult,
  type EmbeddingResult,
  type JudgeRequest,
  type JudgeResult,
  type LlmProvider,
  type Usage,
} from './types.js';

const VERDICT_TOOL = 'record_verdict';
// The Messages API requires a bound; a verdict needs far fewer tokens.
const JUDGE_MAX_TOKENS = 1024;
const DEFAULT_MAX_TOKENS = 4096;

const usageOf = (usage: { input_tokens: number; output_tokens: number }): Usage => ({
  promptTokens: usage.input_tokens,
  completionTokens: usage.output_tokens,
});

const textOf = (content: Anthropic.ContentBlock[]) =>
  content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');

/**
 * Anthropic's Messages API through the official SDK; the judge answers through a forced tool call.
 * The Messages API takes no sampling parameters any more, so `temperature` is not sent.
 */
export class AnthropicProvider implements LlmProvider {
  readonly name = 'anthropic';
  private readonly client: Anthropic;

  constructor(options: AdapterOptions) {
    this.client = new Anthropic({
      // An explicit key keeps the SDK from reading ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN itself.
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  private fail = (err: unknown) => toProviderError(err, 'anthropic', { APIError, APIConnectionError, APIConnectionTimeoutError });

  async judge(request: JudgeRequest): Promise<JudgeResult> {
    const { value: message, latencyMs } = await timed(
      () =>
        this.client.messages.create({
          model: request.model,
          max_tokens: JUDGE_MAX_TOKENS,
          system: request.system,
          messages: [{ role: 'user', content: request.prompt }],
          tools: [
            {
              name: VERDICT_TOOL,
              description: 'Record your verdict on the output under evaluation.',
              input_schema: VERDICT_JSON_SCHEMA,
            },
          ],
          tool_choice: { type: 'tool', name: VERDICT_TOOL },
        }),
      this.fail,
    );
    const call = message.content.find((block) => block.type === 'tool_use' && block.name === VERDICT_TOOL);
    if (!call || call.type !== 'tool_use') throw malformed(`the judge did not call ${VERDICT_TOOL}`, textOf(message.content));
    return {
      verdict: toVerdict(call.input, JSON.stringify(call.input) ?? ''),
      usage: usageOf(message.usage),
      model: message.model,
      latencyMs,
    };
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    // System messages are a parameter of their own in the Messages API, not turns.
    const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
    const turns = request.messages.flatMap((m) => (m.role === 'system' ? [] : [{ role: m.role, content: m.content }]));
    const { value: message, latencyMs } = await timed(
      () =>
        this.client.messages.create({
          model: request.model,
          max_tokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
          ...(system ? { system } : {}),
          messages: turns,
        }),
      this.fail,
    );
    return { text: textOf(message.content), usage: usageOf(message.usage), model: message.model, latencyMs };
  }

  embed(): Promise<EmbeddingResult> {
    return Promise.reject(new ProviderError('unsupported', 'anthropic offers no embeddings; use an openai connection for them'));
  }
}
