import type { Looptrace } from '../client.js';
import type { SpanState } from '../tracing.js';
import { integer, patchMethod, type LlmCall, type StreamAccumulator } from './traced-call.js';

interface Block {
  type?: string;
  text?: string;
  thinking?: string;
  id?: string;
  name?: string;
  input?: unknown;
}
interface Usage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}
interface Message {
  model?: string;
  content?: Block[];
  stop_reason?: string | null;
  usage?: Usage;
}

/** Input tokens include the cached prompt: what the model read, whether billed at cache rates or not. */
const inputTokens = (u: Usage | undefined) =>
  u ? integer((u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0)) : undefined;

function recordMessage(span: SpanState, message: Message | undefined): void {
  const blocks = message?.content ?? [];
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
  const calls = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, input: b.input }));
  span.update({
    output: calls.length > 0 ? { role: 'assistant', content: text, tool_calls: calls } : text,
    model: message?.model,
    promptTokens: inputTokens(message?.usage),
    completionTokens: integer(message?.usage?.output_tokens),
    metadata: message?.stop_reason ? { stop_reason: message.stop_reason } : {},
  });
}

/** The message rebuilt from message_start, content_block_* and message_delta events. */
function messageAccumulator(): StreamAccumulator {
  let message: Message | undefined;
  const blocks: Block[] = [];
  const partialJson = new Map<number, string>();
  return {
    event(raw) {
      const event = raw as {
        type?: string;
        index?: number;
        message?: Message;
        content_block?: Block;
        delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; stop_reason?: string | null };
        usage?: Usage;
      };
      const index = event.index ?? 0;
      if (event.type === 'message_start') message = { ...event.message };
      else if (event.type === 'content_block_start') blocks[index] = { ...event.content_block };
      else if (event.type === 'content_block_delta') {
        const block = (blocks[index] ??= {});
        const delta = event.delta ?? {};
        if (delta.type === 'text_delta') block.text = (block.text ?? '') + (delta.text ?? '');
        else if (delta.type === 'thinking_delta') block.thinking = (block.thinking ?? '') + (delta.thinking ?? '');
        else if (delta.type === 'input_json_delta') partialJson.set(index, (partialJson.get(index) ?? '') + (delta.partial_json ?? ''));
      } else if (event.type === 'message_delta') {
        message ??= {};
        if (event.delta?.stop_reason) message.stop_reason = event.delta.stop_reason;
        // message_delta's usage is cumulative: its output_tokens are the total.
        message.usage = { ...message.usage, ...Object.fromEntries(Object.entries(event.usage ?? {}).filter(([, v]) => v !== null && v !== undefined)) };
      }
    },
    finish(span) {
      for (const [index, json] of partialJson) {
        const block = blocks[index];
        if (!block) continue;
        try {
          block.input = json ? JSON.parse(json) : {};
        } catch {
          block.input = json;
        }
      }
      recordMessage(span, { ...message, content: blocks.filter(Boolean) });
    },
  };
}

const MESSAGES: LlmCall = {
  name: 'anthropic.messages',
  provider: 'anthropic',
  input: (body) => (body.system !== undefined ? [{ role: 'system', content: body.system }, ...((body.messages as unknown[]) ?? [])] : body.messages),
  parameters: ['max_tokens', 'temperature', 'top_p', 'top_k', 'tool_choice', 'thinking', 'stop_sequences'],
  answer: (span, value) => recordMessage(span, value as Message),
  accumulator: messageAccumulator,
};

export function wrapAnthropic<C extends object>(lt: Looptrace, client: C): C {
  patchMethod(lt, (client as { messages?: unknown }).messages, 'create', MESSAGES);
  return client;
}
