import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { serverKeysAt, startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * The spec's eval config is `{provider, model, preset, prompt}` (POST /v1/eval; eval rules, and so
 * the dataset runs of their versions). A field the spec names is never refused, for any provider:
 * a builtin check stores `model` and `prompt` and ignores both; a judge uses them.
 */
let fake: FakeLlm;
let ctx: TestContext;
let workers: Workers;
let t: TestTenant;
const trace = aTrace({ input: 'Capital of France?', output: 'Paris', metadata: { expected: 'Paris' } });

beforeAll(async () => {
  fake = await startFakeLlm();
  ctx = await startApp({
    REDIS_PREFIX: TEST_REDIS_PREFIX,
    ...serverKeysAt(fake),
  });
  workers = await startTestWorkers(ctx, ['evals', 'dataset-runs']);
  t = await createTenant(ctx.app);
  await ingestTraces(ctx.app, t, [trace]);
});
afterAll(async () => {
  await workers?.close();
  await ctx?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.reset();
  fake.verdict = () => ({ score: 0.8, passed: true, reasoning: 'matches the expected answer' });
});

const post = (url: string, payload: object) => ctx.app.inject({ method: 'POST', url, headers: t.auth, payload });
const vendorCalls = () => fake.requests.filter((r) => r.path === '/v1/chat/completions' || r.path === '/v1/messages');
const PROMPT = 'Grade strictly. Expected {{expected}}; the answer was {{output}}.';
const RENDERED = 'Grade strictly. Expected Paris; the answer was Paris.';

describe.each([
  // exact_match needs no parameters: the trace's metadata.expected is compared with its output.
  { provider: 'builtin', model: 'gpt-4o', preset: 'exact_match', score: 1, judgeModel: null, path: null },
  { provider: 'openai', model: 'gpt-4o-mini', preset: 'correctness', score: 0.8, judgeModel: 'gpt-4o-mini-fake', path: '/v1/chat/completions' },
  { provider: 'anthropic', model: 'claude-3-5-haiku-20241022', preset: 'correctness', score: 0.8, judgeModel: 'claude-3-5-haiku-20241022-fake', path: '/v1/messages' },
])('config {provider, model, preset, prompt} with provider $provider', ({ provider, model, preset, score, judgeModel, path }) => {
  const config = { provider, model, preset, prompt: PROMPT };

  /** Builtin: no vendor call, prompt unused. A judge: one call, to its vendor, carrying the prompt rendered over the trace. */
  function expectPromptUse() {
    const calls = vendorCalls();
    if (!path) return expect(calls).toEqual([]);
    expect(calls.map((c) => c.path)).toEqual([path]);
    expect(JSON.stringify(calls[0]!.body)).toContain(RENDERED);
  }

  it('POST /v1/eval takes all four fields, stores them, and scores the trace', async () => {
    const res = await post('/v1/eval', { trace_id: trace.id, metric_name: 'spec-config', config });
    expect(res.statusCode, res.body).toBe(202);
    const done = await pollUntil(
      () => getJson(ctx.app, t, `/v1/eval/${res.json().eval_id}`),
      (r) => r.body.status === 'completed' || r.body.status === 'failed',
    );
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'completed', score, passed: true, judge_model: judgeModel, config });
    expectPromptUse();
  });

  it('POST /v1/eval-rules takes all four fields, versions them, and a dataset run of that version scores with them', async () => {
    const created = await post('/v1/eval-rules', { name: `spec ${provider}`, metric_name: 'spec-config', config, enabled: false });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().config).toEqual(config);
    const version = await getJson(ctx.app, t, `/v1/eval-versions/${created.json().current_version_id}`);
    expect(version.body.config).toEqual(config);

    const dataset = await post('/v1/datasets', { name: `spec ${provider}` });
    expect(dataset.statusCode, dataset.body).toBe(201);
    const items = await post(`/v1/datasets/${dataset.json().id}/items`, { trace_id: trace.id });
    expect(items.statusCode, items.body).toBe(201);
    const run = await post(`/v1/datasets/${dataset.json().id}/runs`, { eval_version_id: created.json().current_version_id });
    expect(run.statusCode, run.body).toBe(201);
    const done = await pollUntil(
      () => getJson(ctx.app, t, `/v1/datasets/${dataset.json().id}/runs/${run.json().id}`),
      (r) => r.body.status === 'completed' || r.body.status === 'failed',
    );
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'completed', pass_count: 1, error_count: 0 });
    expect(done.body.results).toEqual([expect.objectContaining({ score, passed: true, error: null })]);
    expectPromptUse();
  });
});

describe('a builtin check ignores the prompt', () => {
  it('scores the same with and without it', async () => {
    const scores = [];
    for (const config of [{ provider: 'builtin', preset: 'exact_match' }, { provider: 'builtin', model: 'x', preset: 'exact_match', prompt: 'Say {{output}} is wrong.' }]) {
      const res = await post('/v1/eval', { trace_id: trace.id, metric_name: 'ignored', config });
      expect(res.statusCode, res.body).toBe(202);
      const done = await pollUntil(() => getJson(ctx.app, t, `/v1/eval/${res.json().eval_id}`), (r) => r.body.status === 'completed');
      scores.push([done.body.score, done.body.reasoning]);
    }
    expect(scores[1]).toEqual(scores[0]);
  });

  it('and still refuses what the spec does not name (unknown keys) and a prompt over the size bound', async () => {
    for (const config of [
      { provider: 'builtin', preset: 'exact_match', template: 'x' },
      { provider: 'builtin', preset: 'exact_match', prompt: 'x'.repeat(20_001) },
    ]) {
      const res = await post('/v1/eval', { trace_id: trace.id, metric_name: 'refused', config });
      expect(res.statusCode, res.body).toBe(400);
    }
  });
});
