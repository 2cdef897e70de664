import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from './fake-vendor.js';
import { spanNamed, startSdkHarness, type SdkHarness, type StoredTrace } from './harness.js';

/*
 * The packed @looptrace/sdk, installed from its tarball, against the real API on loopback; the
 * official OpenAI and Anthropic SDKs call a local fake vendor.
 */

let h: SdkHarness;
let vendor: FakeVendor;
let lt: InstanceType<SdkHarness['sdk']['Looptrace']>;
const problems: string[] = [];
beforeAll(async () => {
  [h, vendor] = await Promise.all([startSdkHarness(), startFakeVendor()]);
  lt = new h.sdk.Looptrace({ baseUrl: h.url, apiKey: h.tenant.apiKey, onError: (e) => problems.push(e.message) });
});
afterAll(async () => {
  await lt?.shutdown();
  await vendor?.close();
  await h?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` in a trace of its own, sends it, and reads it back from the API. */
async function traced(fn: () => Promise<unknown>): Promise<StoredTrace> {
  const id = await lt.trace('case', async (trace) => {
    await fn();
    return trace.id;
  });
  await lt.flush();
  return h.storedTrace(id);
}

describe('traces and spans', () => {
  it('nests spans by async context, also across Promise.all, and keeps concurrent traces apart', async () => {
    const run = (label: string) =>
      lt.trace(
        'checkout',
        async (trace) => {
          await lt.span('plan', { type: 'agent', input: { label } }, async (plan) => {
            await Promise.all(
              [3, 1, 2].map((i) =>
                lt.span(`lookup ${i}`, { type: 'tool', input: { i } }, async (span) => {
                  await sleep(i * 5);
                  expect(span.traceId).toBe(trace.id);
                  return lt.span('fetch', { type: 'retrieval' }, async () => `${label} item ${i}`);
                }),
              ),
            );
            plan.update({ output: 'planned', metadata: { steps: 3 } });
          });
          await lt.span('charge', { type: 'tool' }, async () => {
            throw new Error('payment gateway timed out');
          }).catch(() => undefined);
          trace.update({ name: `checkout ${label}`, metadata: { charged: false } });
          return { trace: trace.id, label };
        },
        { sessionId: `session-${label}`, tags: ['sdk-test'], metadata: { label }, input: `buy ${label}` },
      );
    const results = await Promise.all([run('a'), run('b')]);
    await lt.flush();

    for (const { trace: id, label } of results) {
      const trace = await h.storedTrace(id);
      expect(trace).toMatchObject({ name: `checkout ${label}`, input: `buy ${label}`, session_id: `session-${label}`, tags: ['sdk-test'], metadata: { label, charged: false } });
      expect(JSON.parse(trace.output)).toEqual({ trace: id, label });
      expect(trace.spans).toHaveLength(1 + 3 + 3 + 1);
      const plan = spanNamed(trace, 'plan');
      expect(plan).toMatchObject({ type: 'agent', parent_span_id: null, output: 'planned', metadata: { steps: 3 } });
      expect(JSON.parse(plan.input)).toEqual({ label });
      for (const i of [1, 2, 3]) {
        const lookup = spanNamed(trace, `lookup ${i}`);
        expect(lookup.parent_span_id).toBe(plan.id);
        const fetches = trace.spans.filter((s) => s.name === 'fetch' && s.parent_span_id === lookup.id);
        expect(fetches.map((s) => s.output)).toEqual([`${label} item ${i}`]);
        expect(lookup.output).toBe(`${label} item ${i}`);
      }
      expect(spanNamed(trace, 'charge')).toMatchObject({ parent_span_id: null, failure_type: 'timeout', error: 'Error: payment gateway timed out' });
    }
  });

  it('a span outside any trace is a trace of its own; errors pass through to the caller unchanged', async () => {
    const failure = new TypeError('bad input');
    let id = '';
    expect(() =>
      lt.span('lonely', { type: 'tool', input: 'q' }, (span) => {
        id = span.traceId;
        throw failure;
      }),
    ).toThrow(failure);
    expect(lt.span('sync', () => 42)).toBe(42);
    const steps = ['first'];
    const snapshot = await lt.span('snapshot', { input: steps }, async (span) => {
      steps.push('added later'); // the input is recorded as it was when the span started
      return span.traceId;
    });
    await lt.flush();
    expect((await h.storedTrace(snapshot)).spans[0]!.input).toBe('["first"]');
    const trace = await h.storedTrace(id);
    expect(trace).toMatchObject({ name: 'lonely', input: 'q', error: 'TypeError: bad input' });
    expect(trace.spans.map((s) => [s.name, s.error])).toEqual([['lonely', 'TypeError: bad input']]);
  });

  it('mask sees every value before it is recorded; sampleRate 0 records nothing', async () => {
    const masked = new h.sdk.Looptrace({
      baseUrl: h.url,
      apiKey: h.tenant.apiKey,
      mask: (value, where) => (where.field === 'metadata' ? value : JSON.stringify(value ?? null).replace(/\d{4}-\d{4}/g, '****')),
    });
    const id = masked.trace('card', (trace) => {
      masked.span('charge', { input: { card: '4242-4242' } }, () => 'charged 1234-5678');
      return trace.id;
    });
    await masked.shutdown();
    const trace = await h.storedTrace(id);
    expect(spanNamed(trace, 'charge')).toMatchObject({ input: '{"card":"****"}', output: '"charged ****"' });

    const sampled = new h.sdk.Looptrace({ baseUrl: h.url, apiKey: h.tenant.apiKey, sampleRate: 0 });
    const unrecorded = sampled.trace('never', (trace) => sampled.span('inner', (span) => [trace.recorded, span.recorded, trace.id, span.traceId]));
    // A lone span sampled out takes the spans inside it along: one decision, not one per span.
    const lone = sampled.span('lone', (outer) => sampled.span('nested', (inner) => [outer.recorded, inner.recorded, inner.traceId === outer.traceId]));
    await sampled.shutdown();
    expect(unrecorded.slice(0, 2)).toEqual([false, false]);
    expect(unrecorded[3]).toBe(unrecorded[2]);
    expect(lone).toEqual([false, false, true]);
    expect(sampled.stats()).toMatchObject({ sent: 0, sampledOut: 2, requests: 0 });
    const res = await h.ctx.app.inject({ method: 'GET', url: `/v1/traces/${String(unrecorded[2])}`, headers: h.tenant.auth });
    expect(res.statusCode).toBe(404);
  });
});

describe('OpenAI wrapper', () => {
  const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${vendor.url}/v1`, maxRetries: 0 });
  const messages = [
    { role: 'system' as const, content: 'be brief' },
    { role: 'user' as const, content: 'capital of France' },
  ];

  it('chat completions: model, messages, answer, tokens; the same object comes back', async () => {
    const client = openai();
    expect(lt.wrapOpenAI(client)).toBe(client);
    lt.wrapOpenAI(client); // twice is once
    let answer = '';
    const trace = await traced(async () => {
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, temperature: 0 }).withResponse();
      expect(response.status).toBe(200);
      answer = data.choices[0]!.message.content!;
    });
    expect(answer).toBe('echo: capital of France');
    expect(trace.spans).toHaveLength(1);
    const span = spanNamed(trace, 'openai.chat.completions');
    expect(span).toMatchObject({ type: 'llm', model: 'gpt-4o-mini-fake', output: answer, error: null, failure_type: null });
    expect(JSON.parse(span.input)).toEqual(messages);
    expect(span.prompt_tokens).toBeGreaterThan(0);
    expect(span.completion_tokens).toBe(4);
    expect(span.metadata).toMatchObject({ provider: 'openai', stream: false, temperature: 0, finish_reason: 'stop' });
  });

  it('a span whose callback returns an APIPromise hands back that object, .withResponse() and all', async () => {
    const bare = openai();
    const trace = await traced(async () => {
      const { data, response } = await lt.span('ask', { type: 'chain' }, () => bare.chat.completions.create({ model: 'gpt-4o-mini', messages })).withResponse();
      expect([response.status, data.choices[0]!.message.content]).toEqual([200, 'echo: capital of France']);
    });
    expect(JSON.parse(spanNamed(trace, 'ask').output).choices[0].message.content).toBe('echo: capital of France');
  });

  it('a call read through .asResponse() leaves the body to the caller; its span ends when the response arrives', async () => {
    const client = lt.wrapOpenAI(openai());
    const trace = await traced(async () => {
      const raw = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).asResponse();
      expect(((await raw.json()) as OpenAI.ChatCompletion).choices[0]!.message.content).toBe('echo: capital of France');
    });
    expect(spanNamed(trace, 'openai.chat.completions')).toMatchObject({ model: 'gpt-4o-mini', output: '', error: null });
  });

  it('chat completions streaming: the caller reads the stream untouched, the span records it when it ends', async () => {
    const bare = openai();
    const wrapped = lt.wrapOpenAI(openai());
    const read = async (client: OpenAI) => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } });
      expect(stream).toBeInstanceOf((await import('openai/streaming')).Stream);
      const deltas: unknown[] = [];
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta ?? chunk.usage);
      return deltas;
    };
    let seen: unknown[] = [];
    const trace = await traced(async () => {
      seen = await read(wrapped);
    });
    expect(seen).toEqual(await read(bare));
    const span = spanNamed(trace, 'openai.chat.completions');
    expect(span).toMatchObject({ output: 'echo: capital of France', model: 'gpt-4o-mini-fake', completion_tokens: 4, metadata: { stream: true, finish_reason: 'stop' } });
    expect(span.prompt_tokens).toBeGreaterThan(0);
  });

  it('tool calls are in the output, plain and streamed; a stream read after the trace returned still belongs to it', async () => {
    const client = lt.wrapOpenAI(openai());
    const tools = [{ type: 'function' as const, function: { name: 'weather', parameters: { type: 'object', properties: {} } } }];
    const id = await lt.trace('tools', async (trace) => {
      await client.chat.completions.create({ model: 'gpt-4o', messages, tools });
      const stream = await client.chat.completions.create({ model: 'gpt-4o', messages, tools, stream: true });
      setTimeout(() => void (async () => { for await (const _ of stream); })(), 50);
      return trace.id;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await lt.flush();
    const trace = await h.storedTrace(id);
    expect(trace.spans).toHaveLength(2);
    for (const span of trace.spans) {
      expect(JSON.parse(span.output)).toEqual({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      });
      expect(span.metadata).toMatchObject({ tools: ['weather'], finish_reason: 'tool_calls' });
    }
  });

  it('responses.create, plain and streamed', async () => {
    const client = lt.wrapOpenAI(openai());
    const trace = await traced(async () => {
      const plain = await client.responses.create({ model: 'gpt-4.1', instructions: 'be brief', input: 'hello there' });
      expect(plain.output_text).toBe('echo: hello there');
      const stream = await client.responses.create({ model: 'gpt-4.1', input: 'streamed hello', stream: true });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      expect(types).toEqual(['response.created', 'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    });
    const [plain, streamed] = trace.spans.sort((a, b) => Number(a.metadata.stream) - Number(b.metadata.stream));
    expect(plain).toMatchObject({ name: 'openai.responses', model: 'gpt-4.1-fake', output: 'echo: hello there', completion_tokens: 3 });
    expect(JSON.parse(plain!.input)).toEqual([{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there' }]);
    expect(streamed).toMatchObject({ output: 'echo: streamed hello', completion_tokens: 3, metadata: { stream: true, status: 'completed' } });
  });

  it('429, 500 and a client time-out: the error reaches the caller and the span, with the failure type the server derives', async () => {
    const client = lt.wrapOpenAI(openai());
    vendor.failNext(429, 500);
    vendor.delayNext(2_000);
    const trace = await traced(async () => {
      await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages })).rejects.toMatchObject({ status: 429 });
      await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true })).rejects.toMatchObject({ status: 500 });
      await expect(client.chat.completions.create({ model: 'gpt-4o', messages }, { timeout: 100 })).rejects.toThrow(/timed out/);
    });
    const byModel = (model: string, stream: boolean) => trace.spans.find((s) => s.model === model && s.metadata.stream === stream)!;
    const limited = byModel('gpt-4o-mini', false);
    expect(limited.failure_type).toBe('rate_limit');
    expect(limited.error).toMatch(/^RateLimitError: 429/);
    const broken = byModel('gpt-4o-mini', true);
    expect(broken.failure_type).toBeNull();
    expect(broken.error).toMatch(/^InternalServerError: 500/);
    const late = byModel('gpt-4o', false);
    expect(late.failure_type).toBe('timeout');
    expect(late.error).toMatch(/^APIConnectionTimeoutError: /);
  });
});

const byModelName = (trace: StoredTrace, model: string) => trace.spans.find((s) => s.model === model);

describe('Anthropic wrapper', () => {
  const anthropic = () => lt.wrapAnthropic(new Anthropic({ apiKey: 'sk-ant-test', baseURL: vendor.url, maxRetries: 0 }));
  const messages = [{ role: 'user' as const, content: 'capital of France' }];

  it('messages.create plain and streamed, a tool call, and a 429', async () => {
    const client = anthropic();
    const tools = [{ name: 'weather', input_schema: { type: 'object' as const, properties: {} } }];
    const trace = await traced(async () => {
      const plain = await client.messages.create({ model: 'claude-test-large', max_tokens: 100, system: 'be brief', messages });
      expect(plain.content).toEqual([{ type: 'text', text: 'echo: capital of France' }]);
      const stream = await client.messages.create({ model: 'claude-test-large', max_tokens: 100, messages, stream: true });
      let text = '';
      for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      expect(text).toBe('echo: capital of France');
      const toolStream = await client.messages.create({ model: 'claude-test-small', max_tokens: 100, messages, tools, stream: true });
      for await (const _ of toolStream);
      vendor.failNext(429, 500);
      await expect(client.messages.create({ model: 'claude-test-small', max_tokens: 100, messages, stop_sequences: ['END'] })).rejects.toMatchObject({ status: 429 });
      await expect(client.messages.create({ model: 'claude-test-broken', max_tokens: 100, messages, stream: true })).rejects.toMatchObject({ status: 500 });
    });
    expect(trace.spans.map((s) => s.name)).toEqual(Array(5).fill('anthropic.messages'));
    expect(byModelName(trace, 'claude-test-broken')).toMatchObject({ failure_type: null, error: expect.stringMatching(/^InternalServerError: 500/) });
    const byModel = (model: string, stream: boolean) => trace.spans.find((s) => s.model.startsWith(model) && s.metadata.stream === stream)!;
    const plain = byModel('claude-test-large', false);
    expect(plain).toMatchObject({ model: 'claude-test-large-fake', output: 'echo: capital of France', completion_tokens: 4, metadata: { stop_reason: 'end_turn', max_tokens: 100 } });
    expect(JSON.parse(plain.input)).toEqual([{ role: 'system', content: 'be brief' }, ...messages]);
    expect(plain.prompt_tokens).toBeGreaterThan(0);
    expect(byModel('claude-test-large', true)).toMatchObject({ output: 'echo: capital of France', completion_tokens: 4, prompt_tokens: plain.prompt_tokens });
    expect(JSON.parse(byModel('claude-test-small', true).output)).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }],
    });
    const limited = byModel('claude-test-small', false);
    expect(limited).toMatchObject({ failure_type: 'rate_limit', model: 'claude-test-small', metadata: { stop_sequences: ['END'] } });
    expect(limited.error).toMatch(/^RateLimitError: 429/);
  });
});

it('nothing was dropped or refused along the way', () => {
  expect(lt.stats()).toMatchObject({ dropped: 0, queued: 0 });
  expect(problems).toEqual([]);
});
