import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JudgeVerdict } from '../../src/providers/types.js';

/**
 * A local stand-in for the LLM vendors, speaking their wire formats closely enough for the real
 * SDKs: OpenAI `POST /v1/chat/completions` (json_schema answers as JSON text) and `/v1/embeddings`
 * (float or base64), Anthropic `POST /v1/messages` (a tool_use block when tools are offered).
 * Base URLs: OpenAI `${url}/v1`, Anthropic `${url}`.
 */

export interface FakeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** Settles when the exchange is over: `abandoned` when the client closed it before the answer (a client-side time-out). */
  outcome: Promise<'answered' | 'abandoned'>;
}

interface Turn {
  role: string;
  content: unknown;
}
interface ChatBody {
  model: string;
  messages: Turn[];
  response_format?: { type: string };
}
interface EmbeddingsBody {
  model: string;
  input: string | string[];
  encoding_format?: string;
}
interface MessagesBody {
  model: string;
  system?: unknown;
  messages: Turn[];
  tools?: { name: string }[];
}

/** One-shot behaviours, used in order by the next requests; then the normal answer again. */
export type FakeBehaviour =
  | { status: number; message?: string; headers?: Record<string, string> }
  | { delayMs: number }
  | { malformed: string };

export interface FakeLlm {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The judge's answer to a prompt (the last user message). */
  verdict: (prompt: string) => JudgeVerdict;
  requests: FakeRequest[];
  enqueue(...behaviours: FakeBehaviour[]): void;
  /** Forgets recorded requests and pending behaviours, and restores the default verdict. */
  reset(): void;
  close(): Promise<void>;
}

const EMBEDDING_DIMENSIONS = 8;

const tokens = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** A deterministic unit-free vector per text, so equal texts embed equally. */
function embedding(text: string): number[] {
  const digest = createHash('sha256').update(text).digest();
  return Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => digest[i]! / 127.5 - 1);
}

const base64Floats = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString('base64');

type Vendor = 'openai' | 'anthropic';

function errorBody(vendor: Vendor, status: number, message: string) {
  const type = status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  return vendor === 'openai' ? { error: { message, type, param: null, code: null } } : { type: 'error', error: { type, message } };
}

function lastUserText(messages: Turn[]): string {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as { type: string; text?: string }[]).map((b) => b.text ?? '').join('');
}

/** The server's own OpenAI and Anthropic keys pointed at the fake: every judge without a tenant connection calls it. */
export const serverKeysAt = (fake: Pick<FakeLlm, 'url'>): Record<string, string> => ({
  OPENAI_API_KEY: 'sk-server-default',
  OPENAI_BASE_URL: `${fake.url}/v1`,
  ANTHROPIC_API_KEY: 'sk-ant-server-default',
  ANTHROPIC_BASE_URL: fake.url,
});

export async function startFakeLlm(): Promise<FakeLlm> {
  const queue: FakeBehaviour[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const defaultVerdict = (): JudgeVerdict => ({ score: 0.9, passed: true, reasoning: 'the output meets the criteria' });
  const fake: FakeLlm = {
    url: '',
    verdict: defaultVerdict,
    requests: [],
    enqueue: (...behaviours) => queue.push(...behaviours),
    reset: () => {
      fake.requests.length = 0;
      queue.length = 0;
      fake.verdict = defaultVerdict;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-request-id': `req_${randomUUID()}`,
      'request-id': `req_${randomUUID()}`,
      ...headers,
    });
    res.end(JSON.stringify(body));
  };

  function openAiChat(body: ChatBody, malformed: string | undefined) {
    const prompt = lastUserText(body.messages);
    const content =
      malformed ?? (body.response_format?.type === 'json_schema' ? JSON.stringify(fake.verdict(prompt)) : `echo: ${prompt}`);
    const promptTokens = body.messages.reduce((n, m) => n + tokens(String(m.content)), 0);
    return {
      id: `chatcmpl-${randomUUID()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: `${body.model}-fake`,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: promptTokens, completion_tokens: tokens(content), total_tokens: promptTokens + tokens(content) },
    };
  }

  function openAiEmbeddings(body: EmbeddingsBody) {
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const promptTokens = inputs.reduce((n, text) => n + tokens(text), 0);
    return {
      object: 'list',
      model: `${body.model}-fake`,
      data: inputs.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: body.encoding_format === 'base64' ? base64Floats(embedding(text)) : embedding(text),
      })),
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
  }

  function anthropicMessage(body: MessagesBody, malformed: string | undefined) {
    const prompt = lastUserText(body.messages);
    const tool = body.tools?.[0];
    const content =
      malformed !== undefined
        ? [{ type: 'text', text: malformed }]
        : tool
          ? [{ type: 'tool_use', id: `toolu_${randomUUID()}`, name: tool.name, input: fake.verdict(prompt) }]
          : [{ type: 'text', text: `echo: ${prompt}` }];
    const inputTokens = tokens(String(body.system ?? '')) + body.messages.reduce((n, m) => n + tokens(String(m.content)), 0);
    return {
      id: `msg_${randomUUID()}`,
      type: 'message',
      role: 'assistant',
      model: `${body.model}-fake`,
      content,
      stop_reason: tool && malformed === undefined ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      stop_details: null,
      container: null,
      usage: { input_tokens: inputTokens, output_tokens: tokens(JSON.stringify(content)), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
  }

  const server = createServer((req, res) => {
    const outcome = new Promise<'answered' | 'abandoned'>((resolve) => res.on('close', () => resolve(res.writableFinished ? 'answered' : 'abandoned')));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0]!;
      const body: unknown = raw ? JSON.parse(raw) : undefined;
      fake.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, outcome });
      const vendor: Vendor = path === '/v1/messages' ? 'anthropic' : 'openai';
      const behaviour = queue.shift();

      const answer = (malformed?: string) => {
        if (req.method === 'POST' && path === '/v1/chat/completions') return send(res, 200, openAiChat(body as ChatBody, malformed));
        if (req.method === 'POST' && path === '/v1/embeddings') return send(res, 200, openAiEmbeddings(body as EmbeddingsBody));
        if (req.method === 'POST' && path === '/v1/messages') return send(res, 200, anthropicMessage(body as MessagesBody, malformed));
        send(res, 404, errorBody(vendor, 404, `no route ${req.method} ${path}`));
      };

      if (!behaviour) return answer();
      if ('status' in behaviour) {
        // The SDKs honour retry-after-ms, which keeps their retries fast here.
        return send(res, behaviour.status, errorBody(vendor, behaviour.status, behaviour.message ?? `fake ${behaviour.status}`), {
          'retry-after-ms': '10',
          ...behaviour.headers,
        });
      }
      if ('delayMs' in behaviour) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, behaviour.delayMs);
        timers.add(timer);
        return;
      }
      answer(behaviour.malformed);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
