import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for OpenAI and Anthropic that streams: chat completions and the Responses API
 * (JSON or server-sent events), Anthropic messages (JSON or SSE), a tool call when tools are
 * offered, and queued error answers. The answer to a user turn is `echo: <turn>`.
 * Base URLs: OpenAI `${url}/v1`, Anthropic `${url}`.
 */
export interface FakeVendor {
  url: string;
  /** Request bodies as received, in order. */
  requests: { path: string; body: Record<string, unknown> }[];
  /** The next requests answer these statuses (vendor error bodies), then normal answers again. */
  failNext(...statuses: number[]): void;
  /** The next request is answered only after this long (a client time-out shorter than it fires first). */
  delayNext(ms: number): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
type Turn = { role: string; content: unknown };

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function lastUserText(body: Json): string {
  const input = body.input ?? body.messages;
  if (typeof input === 'string') return input;
  const last = [...((input as Turn[]) ?? [])].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as { text?: string }[]).map((b) => b.text ?? '').join('');
}

function errorBody(vendor: 'openai' | 'anthropic', status: number) {
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  const message = status === 429 ? 'Rate limit reached for requests' : status >= 500 ? 'The server had an error processing your request' : 'bad request';
  return vendor === 'openai' ? { error: { message, type, param: null, code: null } } : { type: 'error', error: { type, message } };
}

function sse(res: ServerResponse, events: { event?: string; data: unknown }[], done: boolean) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
  if (done) res.write('data: [DONE]\n\n');
  res.end();
}

/** The answer split in pieces, as a stream delivers it. */
const pieces = (text: string) => [text.slice(0, 4), text.slice(4, 9), text.slice(9)].filter(Boolean);

function chat(body: Json, res: ServerResponse) {
  const text = `echo: ${lastUserText(body)}`;
  const model = `${String(body.model)}-fake`;
  const id = `chatcmpl-${randomUUID()}`;
  const tool = Array.isArray(body.tools) ? (body.tools[0] as { function: { name: string } }).function.name : undefined;
  const promptTokens = words(JSON.stringify(body.messages));
  const usage = { prompt_tokens: promptTokens, completion_tokens: words(text), total_tokens: promptTokens + words(text) };
  const call = { id: 'call_1', type: 'function', function: { name: tool, arguments: '{"city":"Paris"}' } };
  if (body.stream !== true) {
    const message = tool ? { role: 'assistant', content: null, tool_calls: [call], refusal: null } : { role: 'assistant', content: text, refusal: null };
    const choice = { index: 0, message, finish_reason: tool ? 'tool_calls' : 'stop', logprobs: null };
    return json(res, 200, { id, object: 'chat.completion', created: 1, model, choices: [choice], usage });
  }
  const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) => ({
    data: { id, object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra },
  });
  const events: { data: unknown }[] = [chunk({ role: 'assistant', content: '' })];
  if (tool) {
    events.push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: tool, arguments: '' } }] }));
    for (const part of ['{"city"', ':"Paris"}']) events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
  } else for (const part of pieces(text)) events.push(chunk({ content: part }));
  events.push(chunk({}, tool ? 'tool_calls' : 'stop'));
  if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) {
    events.push({ data: { id, object: 'chat.completion.chunk', created: 1, model, choices: [], usage } });
  }
  sse(res, events, true);
}

function responses(body: Json, res: ServerResponse) {
  const text = `echo: ${lastUserText(body)}`;
  const inputTokens = words(JSON.stringify(body.input));
  const response = (status: string, content: string) => ({
    id: `resp_${randomUUID()}`,
    object: 'response',
    created_at: 1,
    model: `${String(body.model)}-fake`,
    status,
    output: content
      ? [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: content, annotations: [] }] }]
      : [],
    usage: status === 'completed' ? { input_tokens: inputTokens, output_tokens: words(text), total_tokens: inputTokens + words(text) } : null,
  });
  if (body.stream !== true) return json(res, 200, response('completed', text));
  let sequence = 0;
  const event = (type: string, data: Json) => ({ event: type, data: { type, sequence_number: sequence++, ...data } });
  sse(
    res,
    [
      event('response.created', { response: response('in_progress', '') }),
      ...pieces(text).map((delta) => event('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta })),
      event('response.completed', { response: response('completed', text) }),
    ],
    false,
  );
}

function messages(body: Json, res: ServerResponse) {
  const text = `echo: ${lastUserText(body)}`;
  const model = `${String(body.model)}-fake`;
  const tool = Array.isArray(body.tools) ? (body.tools[0] as { name: string }).name : undefined;
  const inputTokens = words(JSON.stringify(body.messages));
  const content = tool ? [{ type: 'tool_use', id: 'toolu_1', name: tool, input: { city: 'Paris' } }] : [{ type: 'text', text }];
  const message = { id: `msg_${randomUUID()}`, type: 'message', role: 'assistant', model, stop_sequence: null };
  if (body.stream !== true) {
    return json(res, 200, { ...message, content, stop_reason: tool ? 'tool_use' : 'end_turn', usage: { input_tokens: inputTokens, output_tokens: words(text) } });
  }
  const ev = (type: string, data: Json) => ({ event: type, data: { type, ...data } });
  const blocks = tool
    ? [
        ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: tool, input: {} } }),
        ...['{"city"', ':"Paris"}'].map((partial_json) => ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json } })),
      ]
    : [
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ...pieces(text).map((t) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } })),
      ];
  sse(
    res,
    [
      ev('message_start', { message: { ...message, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } } }),
      ...blocks,
      ev('content_block_stop', { index: 0 }),
      ev('message_delta', { delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: words(text) } }),
      ev('message_stop', {}),
    ],
    false,
  );
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${randomUUID()}` });
  res.end(JSON.stringify(body));
}

const readBody = async (req: IncomingMessage): Promise<Json> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Json) : {};
};

export async function startFakeVendor(): Promise<FakeVendor> {
  const failures: (number | { delayMs: number })[] = [];
  const requests: FakeVendor['requests'] = [];
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const path = (req.url ?? '').split('?')[0]!;
      requests.push({ path, body });
      const vendor = path === '/v1/messages' ? 'anthropic' : 'openai';
      const failure = failures.shift();
      if (typeof failure === 'number') return json(res, failure, errorBody(vendor, failure));
      const answer = () => {
        if (res.destroyed) return;
        if (path === '/v1/chat/completions') return chat(body, res);
        if (path === '/v1/responses') return responses(body, res);
        if (path === '/v1/messages') return messages(body, res);
        json(res, 404, errorBody(vendor, 404));
      };
      if (failure) setTimeout(answer, failure.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    failNext: (...statuses) => failures.push(...statuses),
    delayNext: (delayMs) => failures.push({ delayMs }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
