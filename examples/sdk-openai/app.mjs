// A support assistant instrumented with @looptrace/sdk: one trace per customer question, a tool
// span, two OpenAI calls (one streamed), user feedback. Without OPENAI_BASE_URL it starts the
// stand-in vendor of fake-openai.mjs in this process.
//
//   LOOPTRACE_URL=http://localhost:8080 LOOPTRACE_API_KEY=lt_... node app.mjs
import { Looptrace } from '@looptrace/sdk';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fake-openai.mjs';

const vendor = process.env.OPENAI_BASE_URL ? undefined : await startFakeOpenAI();
const lt = new Looptrace(); // LOOPTRACE_URL and LOOPTRACE_API_KEY
const openai = lt.wrapOpenAI(new OpenAI({ apiKey: process.env.OPENAI_API_KEY || 'sk-local', baseURL: process.env.OPENAI_BASE_URL || vendor.baseURL }));

const tools = [{ type: 'function', function: { name: 'lookup_order', parameters: { type: 'object', properties: { order_id: { type: 'string' } } } } }];

async function lookupOrder(orderId) {
  return lt.span('lookup_order', { type: 'tool', input: { orderId } }, async () => ({ orderId, status: 'shipped', eta: 'Friday' }));
}

async function handle(question, customerId) {
  return lt.trace(
    'support-chat',
    async (trace) => {
      const messages = [
        { role: 'system', content: 'You are a concise support agent.' },
        { role: 'user', content: question },
      ];
      const first = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
      const call = first.choices[0].message.tool_calls?.[0];
      if (call) {
        const order = await lookupOrder(JSON.parse(call.function.arguments).order_id);
        messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify(order) });
      }
      // Streamed: the caller reads the stream as usual; the span is recorded when it ends.
      const stream = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return { traceId: trace.id, answer: text.trim() };
    },
    { sessionId: `customer-${customerId}`, tags: ['example', 'support'], input: question },
  );
}

const { traceId, answer } = await handle('Where is my order A-1001?', 42);
console.log(`answer: ${answer}`);
const rated = await lt.feedback({ traceId, score: 0.9, comment: 'quick and right' });
await lt.shutdown();
await vendor?.close();
const { sent, dropped } = lt.stats();
console.log(`trace ${traceId} ${sent === 1 ? 'stored' : 'not stored'} (feedback ${rated.ok ? 'stored' : `not stored: ${rated.error}`}); dropped: ${dropped}`);
console.log(`see it at ${lt.baseUrl}/traces/${traceId}`);
