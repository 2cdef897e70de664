// A tiny OpenAI-compatible server standing in for the vendor: POST /v1/chat/completions, plain or
// streamed (server-sent events), and a tool call when the request offers tools. It answers from a
// small table of canned replies, so the example runs without an OpenAI account.
//
//   node fake-openai.mjs            # listens on 127.0.0.1:4010 (PORT overrides)
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

const REPLIES = [
  [/refund/i, 'Refunds take 5 to 7 business days once the return arrives.'],
  [/order|where/i, 'Your order shipped yesterday and arrives on Friday.'],
];
const reply = (text) => REPLIES.find(([pattern]) => pattern.test(text))?.[1] ?? 'Happy to help with that.';
const words = (text) => text.split(/\s+/).filter(Boolean).length;

function answer(body, res) {
  const last = [...body.messages].reverse().find((m) => m.role === 'user' || m.role === 'tool');
  const wantsTool = Array.isArray(body.tools) && last?.role === 'user';
  const text = last?.role === 'tool' ? `Here is what I found: ${last.content}` : reply(String(last?.content ?? ''));
  const toolCall = { id: 'call_1', type: 'function', function: { name: body.tools?.[0]?.function.name, arguments: '{"order_id":"A-1001"}' } };
  const usage = { prompt_tokens: words(JSON.stringify(body.messages)), completion_tokens: words(text), total_tokens: 0 };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const base = { id: `chatcmpl-${Date.now()}`, created: Math.floor(Date.now() / 1000), model: body.model };
  if (!body.stream) {
    const message = wantsTool ? { role: 'assistant', content: null, tool_calls: [toolCall] } : { role: 'assistant', content: text };
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: wantsTool ? 'tool_calls' : 'stop' }], usage }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (delta, finish = null) =>
    res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  send({ role: 'assistant', content: '' });
  for (const word of text.split(' ')) send({ content: `${word} ` });
  send({}, 'stop');
  if (body.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** Starts the stand-in on `port` (0: any free port); resolves to its OpenAI base URL and a close function. */
export async function startFakeOpenAI(port = 0) {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'only /v1/chat/completions here', type: 'invalid_request_error' } }));
      }
      answer(JSON.parse(raw), res);
    });
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { baseURL: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((resolve) => server.close(resolve)) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { baseURL } = await startFakeOpenAI(Number(process.env.PORT ?? 4010));
  console.log(`fake OpenAI listening: OPENAI_BASE_URL=${baseURL}`);
}
