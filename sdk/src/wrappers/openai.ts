import type { Looptrace } from '../client.js';
import type { SpanState } from '../tracing.js';
import { integer, patchMethod, type Body, type LlmCall, type StreamAccumulator } from './traced-call.js';

interface ToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}
interface ChatMessage {
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ToolCall[];
}
interface ChatCompletion {
  model?: string;
  choices?: { message?: ChatMessage; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}
interface ChatChunk {
  model?: string;
  choices?: { delta?: { content?: string | null; refusal?: string | null; tool_calls?: (ToolCall & { index?: number })[] }; finish_reason?: string | null }[];
  usage?: ChatCompletion['usage'];
}
interface ResponseItem {
  type?: string;
  content?: { type?: string; text?: string }[];
  call_id?: string;
  name?: string;
  arguments?: string;
}
interface OpenAIResponse {
  model?: string;
  status?: string;
  output_text?: string;
  output?: ResponseItem[];
  error?: { message?: string; code?: string } | null;
  usage?: { input_tokens?: number; output_tokens?: number } | null;
}

/** A plain answer as its text; one with tool calls as the assistant message, tool calls included. */
function assistantOutput(content: string | null, toolCalls: unknown[]): unknown {
  return toolCalls.length > 0 ? { role: 'assistant', content, tool_calls: toolCalls } : (content ?? '');
}

function recordChat(span: SpanState, completion: ChatCompletion | undefined): void {
  const choice = completion?.choices?.[0];
  const message = choice?.message;
  span.update({
    output: assistantOutput(message?.content ?? message?.refusal ?? null, message?.tool_calls ?? []),
    model: completion?.model,
    promptTokens: integer(completion?.usage?.prompt_tokens),
    completionTokens: integer(completion?.usage?.completion_tokens),
    metadata: choice?.finish_reason ? { finish_reason: choice.finish_reason } : {},
  });
}

function chatAccumulator(): StreamAccumulator {
  let model: string | undefined;
  let content = '';
  let refusal = '';
  let finishReason: string | null = null;
  let usage: ChatCompletion['usage'];
  const calls: Required<ToolCall & { function: { name: string; arguments: string } }>[] = [];
  return {
    event(raw) {
      const chunk = raw as ChatChunk;
      model = chunk.model ?? model;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return;
      const delta = choice.delta ?? {};
      if (delta.content) content += delta.content;
      if (delta.refusal) refusal += delta.refusal;
      for (const part of delta.tool_calls ?? []) {
        const slot = (calls[part.index ?? 0] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        if (part.id) slot.id = part.id;
        if (part.function?.name) slot.function.name += part.function.name;
        if (part.function?.arguments) slot.function.arguments += part.function.arguments;
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    },
    finish(span) {
      recordChat(span, {
        model,
        usage,
        choices: [{ message: { content: content || null, refusal: refusal || null, tool_calls: calls.filter(Boolean) }, finish_reason: finishReason }],
      });
    },
  };
}

function recordResponse(span: SpanState, response: OpenAIResponse | undefined, streamedText = ''): void {
  const items = response?.output ?? [];
  const text =
    response?.output_text ??
    (items.flatMap((i) => (i.type === 'message' ? (i.content ?? []) : [])).map((c) => c.text ?? '').join('') || streamedText);
  const calls = items.filter((i) => i.type === 'function_call').map((i) => ({ id: i.call_id, name: i.name, arguments: i.arguments }));
  span.update({
    output: assistantOutput(text, calls),
    model: response?.model,
    promptTokens: integer(response?.usage?.input_tokens),
    completionTokens: integer(response?.usage?.output_tokens),
    metadata: response?.status ? { status: response.status } : {},
    ...(response?.error?.message ? { error: response.error.message } : {}),
  });
}

function responsesAccumulator(): StreamAccumulator {
  let final: OpenAIResponse | undefined;
  let text = '';
  let failure: string | undefined;
  return {
    event(raw) {
      const event = raw as { type?: string; delta?: string; response?: OpenAIResponse; message?: string };
      if (event.type === 'response.output_text.delta' && typeof event.delta === 'string') text += event.delta;
      else if (event.type === 'response.completed' || event.type === 'response.incomplete' || event.type === 'response.failed') final = event.response;
      else if (event.type === 'error') failure = event.message ?? 'stream error';
    },
    finish(span) {
      recordResponse(span, final, text);
      if (failure) span.update({ error: failure });
    },
  };
}

/** Chat messages are the input; the Responses API's instructions come first as the system turn. */
function responsesInput(body: Body): unknown {
  const turns = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  return typeof body.instructions === 'string' ? [{ role: 'system', content: body.instructions }, ...(Array.isArray(turns) ? turns : [turns])] : turns;
}

const CHAT: LlmCall = {
  name: 'openai.chat.completions',
  provider: 'openai',
  input: (body) => body.messages,
  parameters: ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'n', 'tool_choice', 'response_format', 'seed'],
  answer: (span, value) => recordChat(span, value as ChatCompletion),
  accumulator: chatAccumulator,
};

const RESPONSES: LlmCall = {
  name: 'openai.responses',
  provider: 'openai',
  input: responsesInput,
  parameters: ['temperature', 'top_p', 'max_output_tokens', 'tool_choice', 'reasoning', 'previous_response_id'],
  answer: (span, value) => recordResponse(span, value as OpenAIResponse),
  accumulator: responsesAccumulator,
};

export function wrapOpenAI<C extends object>(lt: Looptrace, client: C): C {
  const c = client as { chat?: { completions?: unknown }; responses?: unknown };
  patchMethod(lt, c.chat?.completions, 'create', CHAT);
  patchMethod(lt, c.responses, 'create', RESPONSES);
  return client;
}
