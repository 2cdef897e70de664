import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { malformed, parseVerdictText, timed, toProviderError, VERDICT_JSON_SCHEMA, type AdapterOptions } from './common.js';
import type {
  CompletionRequest,
  CompletionResult,
  EmbeddingResult,
  JudgeRequest,
  JudgeResult,
  LlmProvider,
  Usage,
} from './types.js';

const ANSWER_FORMAT =
  'Answer with a JSON object: "score" (a number from 0 to 1), "passed" (true or false) and "reasoning" (a short explanation).';

const usageOf = (usage: { prompt_tokens?: number; completion_tokens?: number } | undefined): Usage => ({
  promptTokens: usage?.prompt_tokens ?? 0,
  completionTokens: usage?.completion_tokens ?? 0,
});

/** OpenAI and OpenAI-compatible servers (vLLM, Ollama, gateways) through the official SDK. */
export class OpenAiProvider implements LlmProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;

  constructor(options: AdapterOptions) {
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      // Explicit nulls: the SDK would otherwise take these from the environment, and a tenant's
      // call must never carry the operator's organisation or project.
      organization: null,
      project: null,
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  private fail = (err: unknown) => toProviderError(err, 'openai', { APIError, APIConnectionError, APIConnectionTimeoutError });

  async judge(request: JudgeRequest): Promise<JudgeResult> {
    const { value: completion, latencyMs } = await timed(
      () =>
        this.client.chat.completions.create({
          model: request.model,
          temperature: 0,
          messages: [
            { role: 'system', content: `${request.system}\n\n${ANSWER_FORMAT}` },
            { role: 'user', content: request.prompt },
          ],
          response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true, schema: VERDICT_JSON_SCHEMA } },
        }),
      this.fail,
    );
    const message = completion.choices[0]?.message;
    if (message?.refusal) throw malformed('the judge refused to answer', message.refusal);
    if (!message?.content) throw malformed('the judge gave no answer', '');
    return { verdict: parseVerdictText(message.content), usage: usageOf(completion.usage), model: completion.model, latencyMs };
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const { value: completion, latencyMs } = await timed(
      () =>
        this.client.chat.completions.create({
          model: request.model,
          messages: request.messages,
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          ...(request.maxTokens !== undefined ? { max_completion_tokens: request.maxTokens } : {}),
        }),
      this.fail,
    );
    const text = completion.choices[0]?.message.content;
    if (typeof text !== 'string') throw malformed('the completion has no text', '');
    return { text, usage: usageOf(completion.usage), model: completion.model, latencyMs };
  }

  async embed(model: string, texts: string[]): Promise<EmbeddingResult> {
    const { value: response, latencyMs } = await timed(() => this.client.embeddings.create({ model, input: texts }), this.fail);
    if (response.data.length !== texts.length) {
      throw malformed(`expected ${texts.length} embeddings, got ${response.data.length}`, '');
    }
    // The SDK decodes its default base64 encoding into Float32Arrays; callers get plain arrays in input order.
    const vectors = [...response.data].sort((a, b) => a.index - b.index).map((d) => Array.from(d.embedding));
    return { vectors, usage: usageOf(response.usage), model: response.model, latencyMs };
  }
}
