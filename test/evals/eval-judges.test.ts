import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { computeCost, findPrice } from '../../src/modules/pricing/prices.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { serverKeysAt, startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import type { Workers } from '../../src/jobs/workers.js';
import { aTrace } from '../builders/traces.js';

let fake: FakeLlm;
let ctx: TestContext;
let workers: Workers;
let t: TestTenant;
const trace = aTrace({ input: 'Capital of France?', output: 'Paris is the capital.', metadata: { expected: 'Paris' } });

beforeAll(async () => {
  fake = await startFakeLlm();
  ctx = await startApp({
    REDIS_PREFIX: TEST_REDIS_PREFIX,
    ...serverKeysAt(fake),
    LOOPTRACE_PROVIDER_TIMEOUT_MS: '500',
    LOOPTRACE_PROVIDER_MAX_RETRIES: '2',
    // The tenant connection below points at the fake on loopback.
    LOOPTRACE_ALLOW_PRIVATE_PROVIDER_URLS: 'true',
  });
  workers = await startTestWorkers(ctx, ['evals']);
  t = await createTenant(ctx.app);
  await ingestTraces(ctx.app, t, [trace]);
});
afterAll(async () => {
  await workers?.close();
  await ctx?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

async function judge(config: Record<string, unknown>, tenant = t, traceId = trace.id) {
  const res = await ctx.app.inject({ method: 'POST', url: '/v1/eval', headers: tenant.auth, payload: { trace_id: traceId, metric_name: 'judged', config } });
  expect(res.statusCode, res.body).toBe(202);
  const done = await pollUntil(
    () => getJson(ctx.app, tenant, `/v1/eval/${res.json().eval_id}`),
    (r) => r.body.status === 'completed' || r.body.status === 'failed',
    200,
  );
  return done.body;
}

const judgeCalls = () => fake.requests.filter((r) => r.path === '/v1/chat/completions' || r.path === '/v1/messages');

describe.each([
  { provider: 'openai', model: 'gpt-4o-mini', path: '/v1/chat/completions' },
  { provider: 'anthropic', model: 'claude-3-5-haiku-20241022', path: '/v1/messages' },
])('LLM judge through $provider', ({ provider, model, path }) => {
  it('records a passing verdict with the judge usage, latency and cost', async () => {
    fake.verdict = () => ({ score: 0.92, passed: true, reasoning: 'states the capital correctly' });
    const ev = await judge({ provider, model, preset: 'correctness' });
    expect(ev, JSON.stringify(ev)).toMatchObject({ status: 'completed', score: 0.92, passed: true, reasoning: 'states the capital correctly', error: null });
    expect(ev.judge_model).toBe(`${model}-fake`);
    expect(ev.prompt_tokens).toBeGreaterThan(0);
    expect(ev.completion_tokens).toBeGreaterThan(0);
    expect(ev.latency_ms).toBeGreaterThanOrEqual(0);
    expect(ev.cost).toBeGreaterThan(0);
    expect(ev.cost).toBe(computeCost(findPrice(`${model}-fake`, new Map()), ev.prompt_tokens, ev.completion_tokens));
    const calls = judgeCalls();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.path).toBe(path);
    const sent = JSON.stringify(calls[0]!.body);
    expect(sent).toContain('Paris is the capital.');
    expect(sent).toContain('Capital of France?');
    expect(sent).toContain('Is the output correct?');
  });

  it('fails the verdict against the threshold when the judge scores low', async () => {
    fake.verdict = () => ({ score: 0.1, passed: false, reasoning: 'wrong city' });
    const ev = await judge({ provider, model, preset: 'relevance' });
    expect(ev).toMatchObject({ status: 'completed', score: 0.1, passed: false, reasoning: 'wrong city' });
  });

  it('ends failed with the reason when the judge answers malformed output', async () => {
    fake.enqueue({ malformed: 'I think it is fine.' });
    const ev = await judge({ provider, model, preset: 'helpfulness' });
    expect(ev.status).toBe('failed');
    expect(ev.error).toMatch(/^malformed_output: /);
    expect(ev.score).toBeNull();
  });

  it('ends failed with a time-out when the vendor does not answer in time (after the retries)', async () => {
    fake.enqueue({ delayMs: 2_000 }, { delayMs: 2_000 }, { delayMs: 2_000 });
    const ev = await judge({ provider, model, preset: 'toxicity' });
    expect(ev.status).toBe('failed');
    expect(ev.error).toMatch(/^timeout: /);
    expect(judgeCalls()).toHaveLength(3);
  });

  it('retries a 429 and then succeeds', async () => {
    fake.enqueue({ status: 429, headers: { 'retry-after-ms': '10' } });
    const ev = await judge({ provider, model, preset: 'conciseness' });
    expect(ev.status).toBe('completed');
    expect(ev.score).toBe(0.9);
    expect(judgeCalls()).toHaveLength(2);
  });

  it('renders a custom prompt over the trace', async () => {
    const ev = await judge({ provider, model, preset: 'custom', prompt: 'Expected {{expected}}; got {{output}}. Context: {{context}}' });
    expect(ev.status).toBe('completed');
    expect(JSON.stringify(judgeCalls()[0]!.body)).toContain('Expected Paris; got Paris is the capital.. Context: (none given)');
  });
});

describe('judge credentials', () => {
  it("uses the tenant's own connection and its default model before the server's", async () => {
    const tenant = await createTenant(ctx.app);
    const tr = aTrace();
    await ingestTraces(ctx.app, tenant, [tr]);
    const conn = await ctx.app.inject({
      method: 'POST',
      url: '/v1/llm-connections',
      headers: tenant.auth,
      payload: { provider: 'openai', base_url: `${fake.url}/v1`, api_key: 'sk-tenant-own-key-1234', default_model: 'gpt-4.1-mini' },
    });
    expect(conn.statusCode, conn.body).toBe(201);
    const ev = await judge({ provider: 'openai', preset: 'correctness' }, tenant, tr.id);
    expect(ev.status).toBe('completed');
    expect(ev.judge_model).toBe('gpt-4.1-mini-fake');
    const call = judgeCalls()[0]!;
    expect(call.headers.authorization).toBe('Bearer sk-tenant-own-key-1234');
    // The server default answers a tenant without a connection.
    fake.reset();
    await judge({ provider: 'openai', preset: 'correctness' });
    expect(judgeCalls()[0]!.headers.authorization).toBe('Bearer sk-server-default');
  });
});
