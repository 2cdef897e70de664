import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import type { EventSink } from '../../src/modules/webhooks/types.js';
import { aFailureRule, anEvalRule, aWebhook } from '../builders/resources.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { startApp, type TestContext } from '../helpers/app.js';
import { controlApi, type Team } from '../helpers/control-api.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { HttpsReceiver, makeTestCa, trustInThisProcess } from '../helpers/https-receiver.js';
import { ingestTraces, withQuery } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

let fake: FakeLlm;
let ctx: TestContext;
let workers: Workers;
let emit: MockInstance<EventSink['emit']>;
let receiver: HttpsReceiver;
// Regression webhooks go to a real HTTPS receiver whose test CA this process trusts.
const ca = makeTestCa();
trustInThisProcess(ca);
const WEBHOOK_SECRET = 'control-loop-webhook-secret-0123';

beforeAll(async () => {
  fake = await startFakeLlm();
  receiver = await HttpsReceiver.start(ca, () => ({ status: 200, body: 'ok' }));
  ctx = await startApp({
    REDIS_PREFIX: TEST_REDIS_PREFIX,
    OPENAI_API_KEY: 'sk-server-default',
    OPENAI_BASE_URL: `${fake.url}/v1`,
    LOOPTRACE_PROVIDER_MAX_RETRIES: '0',
    LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: 'true',
  });
  emit = vi.spyOn(ctx.app.services.webhooks, 'emit');
  workers = await startTestWorkers(ctx, ['evals', 'eval-rules', 'failures-detect', 'control', 'control-scan', 'webhooks', 'webhooks-reconcile']);
});
afterAll(async () => {
  await workers?.close();
  await ctx?.close();
  await Promise.all([fake?.close(), receiver?.close()]);
});

const { tenant, call, created } = controlApi(() => ctx.app);

const containsRule = (t: Team, value: string, extra: Record<string, unknown> = {}) => created('/v1/eval-rules', t, anEvalRule(value, extra));

const policy = (t: Team, body: object) => created('/v1/policies', t, { name: 'remediate', project_id: t.projectId, ...body });

interface Action {
  id: string;
  type: string;
  status: string;
  escalation_reason: string | null;
  metadata: Record<string, unknown>;
  policy_id: string;
  model: string | null;
}

async function actionsOf(t: Team, traceId: string): Promise<Action[]> {
  const res = await call('GET', withQuery('/v1/control/actions', { trace_id: traceId }), t.owner);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.actions as Action[]).reverse();
}

const waitForActions = (t: Team, traceId: string, done: (a: Action[]) => boolean) => pollUntil(() => actionsOf(t, traceId), done, 400);
const remediations = (a: Action[]) => a.filter((x) => x.type !== 'escalate');

describe('control loop against the fake OpenAI-compatible provider', () => {
  it('retries a trace scored below threshold three times, then escalates at the retry cap', async () => {
    const t = await tenant();
    const rule = await containsRule(t, 'Paris');
    await policy(t, { trigger: { eval_rule_id: rule.id }, steps: [{ type: 'retry' }] });
    const trace = aTrace({ output: 'Lyon' });
    await ingestTraces(ctx.app, t, [trace]);

    const actions = await waitForActions(t, trace.id, (a) => a.some((x) => x.type === 'escalate'));
    expect(actions.map((a) => a.type)).toEqual(['retry', 'retry', 'retry', 'escalate']);
    for (const retry of actions.slice(0, 3)) {
      expect(retry).toMatchObject({ status: 'executed', model: 'gpt-4o-mini-fake', output: 'echo: What is the capital of France?', error: null });
      expect((retry as unknown as { prompt_tokens: number }).prompt_tokens).toBeGreaterThan(0);
    }
    expect(actions[3]).toMatchObject({
      status: 'pending_approval',
      require_approval: true,
      escalation_reason: 'retry_threshold_exceeded',
      metadata: { retry_count: 3 },
    });
    const detail = await call('GET', `/v1/traces/${trace.id}`, t.auth);
    expect(detail.body.control_loop_depth).toBe(3);
    const metric = await call('GET', withQuery(`/v1/projects/${t.projectId}/metrics`, { metric: 'retry_cap_hit', window: '7d' }), t.auth);
    expect(metric).toEqual({ status: 200, body: { metric: 'retry_cap_hit', value: 1, window: '7d' } });

    // Approvals: owner only, once, from pending_approval only.
    const escalation = actions[3]!.id;
    expect((await call('POST', `/v1/control/actions/${escalation}/approve`, t.member)).status).toBe(403);
    const approved = await call('POST', `/v1/control/actions/${escalation}/approve`, t.owner);
    expect(approved.body).toMatchObject({ status: 'approved', decided_by: expect.any(String), decided_at: expect.any(String) });
    for (const verb of ['approve', 'reject']) {
      expect(await call('POST', `/v1/control/actions/${escalation}/${verb}`, t.owner)).toMatchObject({ status: 409, body: { code: 'control.action_state' } });
    }
    expect((await call('POST', `/v1/control/actions/${randomUUID()}/reject`, t.owner)).status).toBe(404);
    expect(await call('GET', `/v1/control/actions/${escalation}/diff`, t.owner)).toMatchObject({ status: 409, body: { code: 'control.no_diff' } });
  });

  it('stops a cascade across two policies at max_cascade_depth before any retry cap', async () => {
    const t = await tenant();
    const rule = await containsRule(t, 'Paris');
    const route = await created('/v1/model-routes', t, {
      name: 'mini then bigger',
      model: { provider: 'openai', model: 'gpt-4o-mini' },
      fallbacks: [{ provider: 'openai', model: 'gpt-4o' }, { provider: 'openai', model: 'gpt-4.1' }],
    });
    await policy(t, { trigger: { eval_rule_id: rule.id }, steps: [{ type: 'retry' }], max_retry_depth: 10, max_cascade_depth: 3 });
    await policy(t, { trigger: { eval_rule_id: rule.id }, steps: [{ type: 'fallback_model', model_route_id: route.id }], max_cascade_depth: 3 });
    const trace = aTrace({ output: 'Lyon' });
    await ingestTraces(ctx.app, t, [trace]);

    const actions = await waitForActions(t, trace.id, (a) => a.some((x) => x.escalation_reason === 'cascade_depth_exhausted') && new Set(a.filter((x) => x.type === 'escalate').map((x) => x.policy_id)).size === 2);
    expect(remediations(actions)).toHaveLength(3);
    expect(new Set(remediations(actions).map((a) => a.policy_id)).size).toBe(2);
    expect(actions.some((a) => a.escalation_reason === 'retry_threshold_exceeded')).toBe(false);
    const fallbacks = actions.filter((a) => a.type === 'fallback_model').map((a) => a.metadata.route_model);
    expect(fallbacks).toEqual(['gpt-4o', 'gpt-4.1'].slice(0, fallbacks.length));
  });

  it('records a RemediationRegression cluster and fires failure.detected when a re-score drops more than min_score_drop', async () => {
    const t = await tenant();
    await created('/v1/failure-rules', t, aFailureRule());
    await containsRule(t, 'Paris', { min_score_drop: 0.2 });
    await policy(t, { trigger: { failure_types: ['timeout'] }, steps: [{ type: 'retry' }], max_retry_depth: 1 });
    const hookPath = `/regressions/${t.tenantId}`;
    await created('/v1/webhooks', t, aWebhook(receiver.url(hookPath), { secret: WEBHOOK_SECRET }));
    const trace = aTrace({ output: 'Paris.', spans: [aSpan({ error: 'Request timed out after 30s' })] });
    await ingestTraces(ctx.app, t, [trace]);

    const actions = await waitForActions(t, trace.id, (a) => a.some((x) => x.type === 'escalate'));
    expect(actions.map((a) => a.type)).toEqual(['retry', 'escalate']);
    const clusters = await call('GET', withQuery('/v1/failures/clusters', { type: 'RemediationRegression' }), t.auth);
    expect(clusters.body.clusters).toMatchObject([{ type: 'RemediationRegression', example_trace_ids: [trace.id], project_id: t.projectId }]);
    const fired = emit.mock.calls.filter(([tenantId, event]) => tenantId === t.tenantId && event.type === 'failure.detected' && event.data.type === 'RemediationRegression');
    expect(fired).toHaveLength(1);
    // …and reaches the receiver signed: the HMAC recomputed here over the raw body matches.
    const isRegression = (raw: Buffer) => (JSON.parse(raw.toString()) as { data: { type?: string } }).data.type === 'RemediationRegression';
    const deliveries = await pollUntil(async () => receiver.to(hookPath).filter((r) => isRegression(r.rawBody)), (r) => r.length > 0, 200, 50);
    expect(deliveries).toHaveLength(1);
    const signature = Buffer.from(String(deliveries[0]!.headers['x-service-signature']));
    const expected = Buffer.from(`sha256=${createHmac('sha256', WEBHOOK_SECRET).update(deliveries[0]!.rawBody).digest('hex')}`);
    expect(signature.length === expected.length && timingSafeEqual(signature, expected)).toBe(true);
    expect(JSON.parse(deliveries[0]!.rawBody.toString())).toMatchObject({ type: 'failure.detected', tenant_id: t.tenantId, project_id: t.projectId });

    const diff = await call('GET', `/v1/control/actions/${actions[0]!.id}/diff`, t.owner);
    expect(diff.status).toBe(200);
    expect(diff.body.eval_deltas).toEqual([{ rule_id: expect.any(String), metric_name: 'mentions_Paris', original_score: 1, remediated_score: 0, delta: -1 }]);
  });

  it('modifies the system prompt with the instruction, then escalates when no step is left', async () => {
    const t = await tenant();
    const rule = await containsRule(t, 'Paris');
    const instruction = 'Answer with the city name only.';
    await policy(t, { trigger: { eval_rule_id: rule.id }, steps: [{ type: 'prompt_modification', instruction }] });
    const messages = [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Capital of France?' }];
    const trace = aTrace({ output: 'Lyon', spans: [aSpan({ input: JSON.stringify(messages) })] });
    await ingestTraces(ctx.app, t, [trace]);

    const actions = await waitForActions(t, trace.id, (a) => a.some((x) => x.type === 'escalate'));
    expect(actions.map((a) => [a.type, a.escalation_reason])).toEqual([['prompt_modification', null], ['escalate', 'remediation_exhausted']]);
    const sent = JSON.parse((actions[0] as unknown as { input: string }).input);
    expect(sent).toEqual([{ role: 'system', content: `Be terse.\n\n${instruction}` }, messages[1]]);
    expect(actions[0]).toMatchObject({ status: 'executed', output: 'echo: Capital of France?' });
  });

  it('holds remediations for approval: the diff is 202 until the approved action and its re-scores are done, then 200', async () => {
    const t = await tenant();
    const rule = await containsRule(t, 'echo');
    await policy(t, { trigger: { eval_rule_id: rule.id }, steps: [{ type: 'retry' }], require_approval: true });
    const [held, dropped] = [aTrace({ output: 'Lyon' }), aTrace({ output: 'Lyon' })];
    await ingestTraces(ctx.app, t, [held, dropped]);

    const [waiting] = await waitForActions(t, held.id, (a) => a.length === 1);
    expect(waiting).toMatchObject({ type: 'retry', status: 'pending_approval' });
    expect(await call('GET', `/v1/control/actions/${waiting!.id}/diff`, t.owner)).toEqual({ status: 202, body: { status: 'pending' } });
    expect((await call('POST', `/v1/control/actions/${waiting!.id}/approve`, t.owner)).body.status).toBe('approved');
    const diff = await pollUntil(() => call('GET', `/v1/control/actions/${waiting!.id}/diff`, t.owner), (r) => r.status !== 202, 300);
    expect(diff.status, JSON.stringify(diff.body)).toBe(200);
    expect(diff.body).toMatchObject({
      token_length_delta: expect.any(Number),
      latency_delta_ms: expect.any(Number),
      embedding_similarity: expect.any(Number),
      eval_deltas: [{ metric_name: 'mentions_echo', original_score: 0, remediated_score: 1, delta: 1 }],
    });
    // The remediation passed: once the settler has judged it (its pass run here until it has), the
    // chain ends without another action. A failed one would have its successor created in that pass.
    const judged = await pollUntil(
      async () => {
        await ctx.app.services.controlSettler.pass();
        const [row] = await ctx.stores.sql<{ settled_at: Date | null; metadata: Record<string, unknown> }[]>`
          select settled_at, metadata from control_actions where id = ${waiting!.id}`;
        return row!;
      },
      (row) => row.settled_at !== null,
      300,
    );
    expect(judged.metadata).toMatchObject({ outcome: 'succeeded', regressions: 0 });
    expect((await actionsOf(t, held.id)).map((a) => a.status)).toEqual(['executed']);

    const [other] = await waitForActions(t, dropped.id, (a) => a.length === 1);
    expect((await call('POST', `/v1/control/actions/${other!.id}/reject`, t.owner)).body).toMatchObject({ status: 'rejected' });
    expect((await call('POST', `/v1/control/actions/${other!.id}/approve`, t.owner)).status).toBe(409);
  });
});
