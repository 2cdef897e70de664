import { describe, expect, it } from 'vitest';
import type { Attributes } from '../../../src/modules/ingest/otlp/attributes.js';
import type { OtlpSpan } from '../../../src/modules/ingest/otlp/decode.js';
import { spanHexOf, spanUuid, traceHexOf, traceUuid } from '../../../src/platform/otel-ids.js';
import { mapSpan } from '../../../src/modules/ingest/otlp/mapping.js';

function span(attributes: Attributes, overrides: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    parentSpanId: '',
    traceState: '',
    name: 'span',
    kind: 1,
    startNs: 1_793_534_400_000_000_000n,
    endNs: 1_793_534_400_250_000_000n,
    attributes,
    events: [],
    links: [],
    status: { code: 0, message: '' },
    ...overrides,
  };
}

function fields(attributes: Attributes, overrides: Partial<OtlpSpan> = {}) {
  const mapped = mapSpan(span(attributes, overrides), {}, { name: '', version: '' });
  if (!mapped.ok) throw new Error(mapped.reason);
  return mapped.fields;
}

describe('span ids', () => {
  it('formats the trace id as the UUID and pads the span id into the last 8 bytes', () => {
    expect(traceUuid('0af7651916cd43dd8448eb211c80319c')).toBe('0af76519-16cd-43dd-8448-eb211c80319c');
    expect(spanUuid('b7ad6b7169203331')).toBe('00000000-0000-0000-b7ad-6b7169203331');
    expect(spanHexOf(spanUuid('b7ad6b7169203331'))).toBe('b7ad6b7169203331');
    expect(traceHexOf('0AF76519-16CD-43DD-8448-EB211C80319C')).toBe('0af7651916cd43dd8448eb211c80319c');
    const f = fields({}, { parentSpanId: '00f067aa0ba902b7' });
    expect(f).toMatchObject({ spanId: '00000000-0000-0000-b7ad-6b7169203331', parentSpanId: '00000000-0000-0000-00f0-67aa0ba902b7' });
  });

  it('rejects invalid ids and times', () => {
    const reason = (o: Partial<OtlpSpan>) => {
      const m = mapSpan(span({}, o), {}, { name: '', version: '' });
      return m.ok ? null : m.reason;
    };
    expect(reason({ traceId: null })).toContain('trace id');
    expect(reason({ traceId: 'abcd' })).toContain('trace id');
    expect(reason({ spanId: '0000000000000000' })).toContain('span id');
    expect(reason({ parentSpanId: 'abc' })).toContain('parent');
    expect(reason({ startNs: 0n })).toContain('start time');
    expect(reason({ endNs: 1n })).toContain('before start');
  });
});

describe('attribute mapping', () => {
  it('OpenInference: kind, input/output values, model and token counts', () => {
    const f = fields({
      'openinference.span.kind': 'LLM',
      'llm.model_name': 'claude-3-5-sonnet-20241022',
      'llm.token_count.prompt': 100,
      'llm.token_count.completion': 20,
      'input.value': '{"messages":[]}',
      'input.mime_type': 'application/json',
      'output.value': 'hello',
    });
    expect(f).toMatchObject({ type: 'llm', model: 'claude-3-5-sonnet-20241022', promptTokens: 100, completionTokens: 20, input: '{"messages":[]}', output: 'hello' });
    expect(f.metadata).toEqual({ 'input.mime_type': 'application/json' });
    expect(fields({ 'openinference.span.kind': 'RETRIEVER' }).type).toBe('retrieval');
    expect(fields({ 'openinference.span.kind': 'TOOL' }).type).toBe('tool');
  });

  it('OpenInference message lists when there is no input.value', () => {
    const f = fields({
      'llm.input_messages.0.message.role': 'system',
      'llm.input_messages.0.message.content': 'be brief',
      'llm.input_messages.1.message.role': 'user',
      'llm.input_messages.1.message.content': 'hi',
      'llm.output_messages.0.message.role': 'assistant',
      'llm.output_messages.0.message.content': 'hello',
    });
    expect(JSON.parse(f.input)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ]);
    expect(f.output).toBe('hello');
    expect(f.metadata).toEqual({});
  });

  it('OpenLLMetry: traceloop kinds and entity input/output, indexed prompts, legacy token names', () => {
    expect(fields({ 'traceloop.span.kind': 'workflow', 'traceloop.entity.input': '{"a":1}', 'traceloop.entity.output': '"ok"' })).toMatchObject({
      type: 'workflow',
      input: '{"a":1}',
      output: '"ok"',
    });
    const llm = fields({
      'gen_ai.system': 'OpenAI',
      'llm.request.type': 'chat',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.usage.prompt_tokens': 7,
      'gen_ai.usage.completion_tokens': 2,
      'gen_ai.prompt.0.role': 'user',
      'gen_ai.prompt.0.content': 'hi',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.content': 'hello',
      'gen_ai.completion.1.role': 'assistant',
      'gen_ai.completion.1.content': 'hey',
    });
    expect(llm).toMatchObject({ type: 'llm', model: 'gpt-4o', promptTokens: 7, completionTokens: 2 });
    expect(JSON.parse(llm.input)).toEqual([{ role: 'user', content: 'hi' }]);
    expect(JSON.parse(llm.output)).toHaveLength(2);
    expect(llm.metadata).toEqual({ 'gen_ai.system': 'OpenAI', 'llm.request.type': 'chat' });
  });

  it('GenAI semconv: operation names, prompt/completion events, explicit cost', () => {
    expect(fields({ 'gen_ai.operation.name': 'embeddings', 'gen_ai.request.model': 'text-embedding-3-small' }).type).toBe('embedding');
    expect(fields({ 'gen_ai.operation.name': 'execute_tool' }).type).toBe('tool');
    expect(fields({ 'gen_ai.operation.name': 'invoke_agent' }).type).toBe('agent');
    expect(fields({ 'http.method': 'GET' }).type).toBe('span');
    const f = fields(
      { 'gen_ai.request.model': 'gpt-4o', 'gen_ai.usage.cost': 0.25, 'llm.cost': 9 },
      {
        events: [
          { name: 'gen_ai.content.prompt', timeNs: 1n, attributes: { 'gen_ai.prompt': 'question' } },
          { name: 'gen_ai.content.completion', timeNs: 2n, attributes: { 'gen_ai.completion': 'answer' } },
          { name: 'cache.miss', timeNs: 3n, attributes: { key: 'k' } },
        ],
      },
    );
    expect(f).toMatchObject({ type: 'llm', input: 'question', output: 'answer', cost: 0.25 });
    expect(f.metadata).toEqual({ 'llm.cost': 9, 'otel.events': [{ name: 'cache.miss', time_unix_nano: '3', attributes: { key: 'k' } }] });
    const messages = fields({}, {
      events: [
        { name: 'gen_ai.user.message', timeNs: 1n, attributes: { content: 'hi' } },
        { name: 'gen_ai.choice', timeNs: 2n, attributes: { index: 0, message: 'hello' } },
      ],
    });
    expect(JSON.parse(messages.input)).toEqual([{ role: 'user', content: 'hi' }]);
    expect(messages.output).toBe('hello');
  });

  it('errors from status, exception events and looptrace.error; failure types classified', () => {
    expect(fields({}, { status: { code: 2, message: 'Request timed out' } })).toMatchObject({ error: 'Request timed out', failureType: 'timeout' });
    const exception = {
      name: 'exception',
      timeNs: 5n,
      attributes: { 'exception.type': 'RateLimitError', 'exception.message': 'Error code: 429' },
    };
    expect(fields({}, { status: { code: 2, message: '' }, events: [exception] })).toMatchObject({ error: 'RateLimitError: Error code: 429', failureType: 'rate_limit' });
    expect(fields({}, { events: [exception] }).error).toBe('RateLimitError: Error code: 429'); // status unset
    expect(fields({}, { status: { code: 1, message: '' }, events: [exception] }).error).toBeNull(); // explicitly OK
    expect(fields({ 'http.response.status_code': 429 }, { status: { code: 2, message: 'failed' } })).toMatchObject({ statusCode: 429, failureType: 'rate_limit' });
    expect(fields({ 'looptrace.error': 'boom', 'looptrace.failure_type': 'invalid_response' })).toMatchObject({ error: 'boom', failureType: 'invalid_response' });
    expect(fields({ 'error.type': 'context_length_exceeded' }, { status: { code: 2, message: 'bad request' } }).failureType).toBe('context_length');
  });

  it('keeps resource, scope, kind, links and trace state in metadata', () => {
    const mapped = mapSpan(
      span({ 'session.id': 's1' }, {
        kind: 3,
        traceState: 'vendor=1',
        links: [{ traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceState: '', attributes: {} }],
      }),
      { 'service.name': 'api' },
      { name: 'openai-instrumentation', version: '0.1' },
    );
    expect(mapped.ok && mapped.fields.metadata).toEqual({
      'session.id': 's1',
      'otel.resource': { 'service.name': 'api' },
      'otel.scope': { name: 'openai-instrumentation', version: '0.1' },
      'otel.span_kind': 'client',
      'otel.trace_state': 'vendor=1',
      'otel.links': [{ trace_id: 'ab'.repeat(16), span_id: 'cd'.repeat(8), attributes: {} }],
    });
  });
});
