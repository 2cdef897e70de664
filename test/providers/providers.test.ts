import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { guardedFetch } from '../../src/platform/ssrf.js';
import { createProvider, type ProviderName, type ProviderSettings } from '../../src/providers/index.js';
import { ProviderError, type JudgeRequest } from '../../src/providers/types.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';

// The guarded fetch as itself, counted: how many requests a guarded provider attempted.
vi.mock('../../src/platform/ssrf.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/platform/ssrf.js')>();
  return { ...actual, guardedFetch: vi.fn(actual.guardedFetch) };
});

let fake: FakeLlm;
beforeAll(async () => {
  fake = await startFakeLlm();
});
afterAll(async () => fake?.close());
beforeEach(() => {
  fake.reset();
  vi.mocked(guardedFetch).mockClear();
});

const judgeRequest: JudgeRequest = {
  model: 'judge-model',
  system: 'You grade answers for factual accuracy.',
  prompt: 'Question: capital of France? Answer: Paris',
};

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe.each(['openai', 'anthropic'] as const)('%s provider against the fake vendor', (vendor: ProviderName) => {
  const make = (over: Partial<ProviderSettings> = {}) =>
    createProvider({
      provider: vendor,
      apiKey: 'sk-test-0123456789',
      baseUrl: vendor === 'openai' ? `${fake.url}/v1` : fake.url,
      timeoutMs: 5_000,
      maxRetries: 2,
      ...over,
    });

  it('judges a passing output and reports usage, model and latency', async () => {
    const result = await make().judge(judgeRequest);
    expect(result.verdict).toEqual({ score: 0.9, passed: true, reasoning: 'the output meets the criteria' });
    expect(result.model).toBe('judge-model-fake');
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.usage.completionTokens).toBeGreaterThan(0);
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);

    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    // Both SDKs send the key as a bearer token (this Anthropic SDK no longer uses x-api-key).
    expect(request!.headers.authorization).toBe('Bearer sk-test-0123456789');
    if (vendor === 'openai') {
      expect(request!.path).toBe('/v1/chat/completions');
      expect(request!.body).toMatchObject({
        model: 'judge-model',
        temperature: 0,
        response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true } },
      });
    } else {
      expect(request!.path).toBe('/v1/messages');
      expect(request!.body).toMatchObject({
        model: 'judge-model',
        system: judgeRequest.system,
        tool_choice: { type: 'tool', name: 'record_verdict' },
        tools: [{ name: 'record_verdict', input_schema: { type: 'object', required: ['score', 'passed', 'reasoning'] } }],
      });
    }
  });

  it('judges a failing output', async () => {
    fake.verdict = () => ({ score: 0.1, passed: false, reasoning: 'the answer is wrong' });
    const { verdict } = await make().judge(judgeRequest);
    expect(verdict).toEqual({ score: 0.1, passed: false, reasoning: 'the answer is wrong' });
  });

  it('refuses malformed judge output as malformed_output, saying what was wrong', async () => {
    fake.enqueue({ malformed: 'I think it is mostly fine, maybe 7/10.' });
    const err = await failure(make().judge(judgeRequest));
    expect(err.failure).toBe('malformed_output');
    expect(err.message).toContain('I think it is mostly fine');

    fake.verdict = () => ({ score: 1.5, passed: true, reasoning: 'too generous' });
    const outOfRange = await failure(make().judge(judgeRequest));
    expect(outOfRange.failure).toBe('malformed_output');
    expect(outOfRange.message).toContain('score');
  });

  it('times out as timeout, closing the request it gave up on', async () => {
    fake.enqueue({ delayMs: 1_500 });
    const err = await failure(make({ timeoutMs: 200, maxRetries: 0 }).judge(judgeRequest));
    expect(err).toMatchObject({ failure: 'timeout', message: `${vendor} did not answer in time` });
    // One attempt, which the client closed before the vendor answered.
    expect(fake.requests).toHaveLength(1);
    expect(await fake.requests[0]!.outcome).toBe('abandoned');
  });

  it('retries a timed-out request', async () => {
    fake.enqueue({ delayMs: 5_000 });
    const result = await make({ timeoutMs: 1_000, maxRetries: 1 }).judge(judgeRequest);
    expect(result.verdict.passed).toBe(true);
    expect(fake.requests).toHaveLength(2);
    expect([await fake.requests[0]!.outcome, await fake.requests[1]!.outcome]).toEqual(['abandoned', 'answered']);
  });

  it('retries a 429 and succeeds', async () => {
    fake.enqueue({ status: 429 });
    const result = await make({ maxRetries: 1 }).judge(judgeRequest);
    expect(result.verdict.passed).toBe(true);
    expect(fake.requests).toHaveLength(2);
  });

  it('gives up on 5xx after its retries as server_error', async () => {
    fake.enqueue({ status: 500 }, { status: 500 });
    const err = await failure(make({ maxRetries: 1 }).judge(judgeRequest));
    expect(err).toMatchObject({ failure: 'server_error', status: 500 });
    expect(fake.requests).toHaveLength(2);
  });

  it('reports a refused key as auth, without retrying', async () => {
    fake.enqueue({ status: 401, message: 'invalid x-api-key' });
    const err = await failure(make().judge(judgeRequest));
    expect(err).toMatchObject({ failure: 'auth', status: 401 });
    expect(fake.requests).toHaveLength(1);
  });

  it('reports a refused request as bad_request', async () => {
    fake.enqueue({ status: 400, message: 'model not found' });
    expect((await failure(make().judge(judgeRequest))).failure).toBe('bad_request');
  });

  it('reports a closed port as unreachable', async () => {
    const err = await failure(make({ baseUrl: 'http://127.0.0.1:1', maxRetries: 0 }).judge(judgeRequest));
    expect(err.failure).toBe('unreachable');
  });

  it('completes a conversation', async () => {
    const result = await make().complete({
      model: 'chat-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello there' },
      ],
      maxTokens: 50,
    });
    expect(result.text).toBe('echo: hello there');
    expect(result.model).toBe('chat-model-fake');
    expect(result.usage.completionTokens).toBeGreaterThan(0);
    if (vendor === 'anthropic') expect(fake.requests[0]!.body).toMatchObject({ system: 'Be brief.', max_tokens: 50 });
  });

  it('refuses a guarded connection to a loopback address as blocked_url at once, sending nothing', async () => {
    const guarded = make({ guard: { allowPrivate: false }, maxRetries: 3 });
    for (const call of [guarded.judge(judgeRequest), guarded.complete({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })]) {
      expect((await failure(call)).failure).toBe('blocked_url');
    }
    // Refused before the SDK, whose retries of a refused request would back off for seconds: the
    // SDK never asked the guarded fetch for a request (4 times each if it had, with 3 retries).
    expect(guardedFetch).not.toHaveBeenCalled();
    expect(fake.requests).toHaveLength(0);
  });

  it('goes through the guarded fetch when the operator allows private URLs', async () => {
    const result = await make({ guard: { allowPrivate: true } }).judge(judgeRequest);
    expect(result.verdict.score).toBe(0.9);
    expect(guardedFetch).toHaveBeenCalledTimes(1);
    expect(fake.requests).toHaveLength(1);
  });
});

describe('embeddings', () => {
  it('embeds texts with openai, in input order', async () => {
    const openai = createProvider({ provider: 'openai', apiKey: 'sk-test', baseUrl: `${fake.url}/v1`, timeoutMs: 5_000, maxRetries: 0 });
    const result = await openai.embed('text-embedding-3-small', ['first text', 'second', 'first text']);
    expect(result.vectors).toHaveLength(3);
    expect(result.vectors[0]).toHaveLength(8);
    expect(result.vectors[0]).toEqual(result.vectors[2]);
    expect(result.vectors[0]).not.toEqual(result.vectors[1]);
    expect(result.vectors[0]!.every((v) => typeof v === 'number' && v >= -1 && v <= 1)).toBe(true);
    expect(result).toMatchObject({ model: 'text-embedding-3-small-fake', usage: { promptTokens: 5, completionTokens: 0 } });
    expect(fake.requests[0]).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small' } });
  });

  it('has none with anthropic', async () => {
    const anthropic = createProvider({ provider: 'anthropic', apiKey: 'sk-test', baseUrl: fake.url, timeoutMs: 5_000, maxRetries: 0 });
    expect((await failure(anthropic.embed('any', ['text']))).failure).toBe('unsupported');
  });
});
