/**
 * Chat messages recognised in an input or output, whatever the SDK that recorded them: a list of
 * `{role, content}`, an OpenAI request (`messages`) or response (`choices[].message`), an Anthropic
 * request (`system` + `messages`) or response (`{role, content: [blocks]}`), OTel GenAI's
 * `gen_ai.input.messages` / `gen_ai.output.messages` (`{role, parts}`), with tool calls and tool
 * results in each one's shape.
 */
export type Part =
  | { kind: 'text'; text: string }
  | { kind: 'tool_call'; name: string; id: string | null; arguments: string }
  | { kind: 'tool_result'; id: string | null; content: string }
  | { kind: 'other'; value: unknown };

export interface Message {
  role: string;
  /** The tool's name on an OpenAI tool message, the participant's on a named message. */
  name: string | null;
  parts: Part[];
}

export type Shown = { kind: 'empty' } | { kind: 'text'; text: string } | { kind: 'json'; value: unknown } | { kind: 'chat'; messages: Message[] };

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const isMessage = (v: unknown): v is Json => isObject(v) && typeof v.role === 'string' && ('content' in v || 'tool_calls' in v || 'parts' in v);

/** What a payload is, so it is shown as a conversation, a JSON tree or text. */
export function classify(text: string): Shown {
  if (text.trim() === '') return { kind: 'empty' };
  const value = parseStructured(text);
  if (value === undefined) return { kind: 'text', text };
  const messages = toMessages(value);
  return messages ? { kind: 'chat', messages } : { kind: 'json', value };
}

/** Only objects and arrays are worth a tree; a bare JSON string or number reads best as text. */
function parseStructured(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

export function toMessages(value: unknown): Message[] | undefined {
  if (Array.isArray(value)) return value.length > 0 && value.every(isMessage) ? value.map(toMessage) : undefined;
  if (!isObject(value)) return undefined;
  // A chat request: OpenAI's or Anthropic's `messages`, the OpenAI Responses API's `input`.
  const list = Array.isArray(value.messages) ? value.messages : Array.isArray(value.input) ? value.input : undefined;
  if (list && list.length > 0 && list.every(isMessage)) {
    const system = systemText(value.system ?? value.instructions);
    return [...(system === null ? [] : [{ role: 'system', name: null, parts: [{ kind: 'text' as const, text: system }] }]), ...list.map(toMessage)];
  }
  if (Array.isArray(value.choices)) {
    const choices = value.choices.map((c) => (isObject(c) ? c.message : undefined));
    return choices.length > 0 && choices.every(isMessage) ? choices.map(toMessage) : undefined;
  }
  return isMessage(value) ? [toMessage(value)] : undefined;
}

/** Anthropic's `system` is a string or a list of text blocks. */
function systemText(system: unknown): string | null {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return null;
  const texts = system.map((b) => (isObject(b) ? str(b.text) : null)).filter((t): t is string => t !== null);
  return texts.length > 0 ? texts.join('\n\n') : null;
}

function toMessage(m: Json): Message {
  const parts: Part[] = [];
  const role = String(m.role);
  const content = 'content' in m ? m.content : m.parts;
  const toolCallId = str(m.tool_call_id);
  const resultBlocks = Array.isArray(content) && content.some((b) => isObject(b) && (b.type === 'tool_result' || b.type === 'tool_call_response'));
  if ((role === 'tool' || role === 'function' || toolCallId !== null) && !resultBlocks) {
    parts.push({ kind: 'tool_result', id: toolCallId, content: contentText(content) });
  } else if (typeof content === 'string') {
    if (content !== '') parts.push({ kind: 'text', text: content });
  } else if (Array.isArray(content)) {
    parts.push(...content.map(toPart));
  } else if (content !== null && content !== undefined) {
    parts.push({ kind: 'other', value: content });
  }
  if (Array.isArray(m.tool_calls)) parts.push(...m.tool_calls.map(toolCall));
  if (isObject(m.function_call)) parts.push(toolCall({ function: m.function_call }));
  return { role, name: str(m.name), parts };
}

function toPart(block: unknown): Part {
  if (typeof block === 'string') return { kind: 'text', text: block };
  if (!isObject(block)) return { kind: 'other', value: block };
  if (block.type === 'text' || block.type === 'input_text' || block.type === 'output_text') {
    // OTel GenAI's gen_ai.input.messages parts carry the text as `content`.
    const text = str(block.text) ?? str(block.content);
    if (text !== null) return { kind: 'text', text };
  }
  if (block.type === 'tool_use' || block.type === 'tool_call') return toolCall({ id: block.id, function: { name: block.name, arguments: block.input ?? block.arguments } });
  if (block.type === 'tool_result') return { kind: 'tool_result', id: str(block.tool_use_id), content: contentText(block.content) };
  if (block.type === 'tool_call_response') return { kind: 'tool_result', id: str(block.id), content: contentText(block.response) };
  if (typeof block.text === 'string' && Object.keys(block).every((k) => k === 'text' || k === 'type')) return { kind: 'text', text: block.text };
  return { kind: 'other', value: block };
}

function toolCall(call: unknown): Part {
  const fn = isObject(call) && isObject(call.function) ? call.function : isObject(call) ? call : {};
  const args = fn.arguments ?? fn.input ?? fn.args;
  return {
    kind: 'tool_call',
    name: str(fn.name) ?? '',
    id: isObject(call) ? str(call.id) : null,
    arguments: typeof args === 'string' ? prettyJson(args) : JSON.stringify(args ?? {}, null, 2),
  };
}

/** A tool's result: text as it is, text blocks joined, anything else as JSON. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return prettyJson(content);
  if (Array.isArray(content) && content.every((b) => isObject(b) && typeof b.text === 'string')) return content.map((b) => (b as { text: string }).text).join('\n\n');
  return content === undefined || content === null ? '' : JSON.stringify(content, null, 2);
}

/** Tool arguments arrive as JSON text: indented when they parse, as they are otherwise. */
function prettyJson(text: string): string {
  const value = parseStructured(text);
  return value === undefined ? text : JSON.stringify(value, null, 2);
}
