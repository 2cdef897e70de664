import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import type { EventSink } from '../../src/modules/webhooks/types.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { startApp, type TestContext } from '../helpers/app.js';
import { controlApi, type Team } from '../helpers/control-api.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { ingestTraces, withQuery } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import { aPrompt, create } from '../builders/resources.js';

/**
 * Prompt deployments end to end, against the fake OpenAI-compatible server (OPENAI_BASE_URL) and
 * the real workers: the `prompts` job (proposal, A/B test) and the repeatable `prompts-lifecycle`
 * pass (autoship, monitoring, auto rollback, automatic proposals). The fake echoes the user turn,
 * and the prompts are {{input}} templates, so a proposed prompt containing KEYWORD makes every
 * replay pass the builtin `contains` rule, and one without it changes nothing: pass and fail on cue.
 */

const KEYWORD = 'CITED';
const ERROR = 'refund policy lookup failed';

let fake: FakeLlm;
let ctx: TestContext;
let workers: Workers;
let emit: MockInstance<EventSink['emit']>;

beforeAll(async () => {
  fake = await startFakeLlm();
  ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX, OPENAI_API_KEY: 'sk-server-default', OPENAI_BASE_URL: `${fake.url}/v1`, LOOPTRACE_PROVIDER_MAX_RETRIES: '0' });
  emit = vi.spyOn(ctx.app.services.webhooks, 'emit');
  workers = await startTestWorkers(ctx, ['evals', 'eval-rules', 'prompts', 'prompts-lifecycle']);
});
afterAll(async () => {
  await workers?.close();
  await ctx?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

const { tenant, call, created } = controlApi(() => ctx.app);

/** The fake's next chat answer: the proposer's JSON. */
const nextProposal = (proposed: string) => fake.enqueue({ malformed: JSON.stringify({ proposed_prompt: proposed, rationale: 'Citing the policy answers the refund questions.' }) });
const improved = (name: string) => `Answer with the refund policy and end with ${KEYWORD}: {{input}} (${name})`;

interface Setup {
  t: Team;
  name: string;
  signature: string;
  ownerId: string;
}

/** A Team tenant with a `contains KEYWORD` rule, a prompt, failing traces in one cluster and passing ones. */
async function setup(opts: { failing: number; autoship?: boolean; beforeLastFailure?: () => void }): Promise<Setup> {
  const t = await tenant('team');
  const name = `support-${randomUUID().slice(0, 8)}`;
  await created('/v1/eval-rules', t, { name: 'cites', metric_name: 'cites', project_id: t.projectId, config: { provider: 'builtin', preset: 'contains', params: { value: KEYWORD } } });
  if (opts.autoship) expect((await call('PATCH', `/v1/projects/${t.projectId}`, t.owner, { prompt_autoship_enabled: true })).status).toBe(200);
  await create(ctx.app, '/v1/prompts', t.auth, aPrompt(t.projectId, { name }));
  const meta = { prompt_name: name, prompt_version: 1 };
  const failing = Array.from({ length: opts.failing }, (_, i) =>
    aTrace({ output: 'I cannot say.', spans: [aSpan({ input: `refund for order ${i}?`, output: 'I cannot say.', error: ERROR, metadata: meta })] }),
  );
  const passing = Array.from({ length: 3 }, (_, i) => aTrace({ output: `Policy ${KEYWORD}`, spans: [aSpan({ input: `hours ${i}?`, output: `Open 9-5 ${KEYWORD}`, metadata: meta })] }));
  await ingestTraces(ctx.app, t, [...passing, ...failing]);
  let signature = '';
  for (const [i, trace] of failing.entries()) {
    if (i === failing.length - 1) opts.beforeLastFailure?.();
    const cluster = await ctx.app.services.failures.record(t.tenantId, { projectId: t.projectId, type: 'Unknown', error: ERROR, traceId: trace.id, at: new Date() });
    signature = cluster.signature;
  }
  const me = await call('GET', '/v1/me', t.owner);
  return { t, name, signature, ownerId: me.body.user.id };
}

const deployment = (s: Setup, id: string) => call('GET', `/v1/prompts/deployments/${id}`, s.t.owner);
const until = (s: Setup, id: string, statuses: string[]) =>
  pollUntil(() => deployment(s, id), (r) => statuses.includes(r.body.status), 300);
const active = (s: Setup) => call('GET', withQuery(`/v1/prompts/${s.name}/active`), s.t.auth);

async function propose(s: Setup, proposed: string) {
  nextProposal(proposed);
  const res = await call('POST', '/v1/prompts/deployments', s.t.member, { project_id: s.t.projectId, cluster_signature: s.signature, prompt_name: s.name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toMatchObject({ status: 'proposed', current_prompt: 'Answer briefly: {{input}}', from_version: 1, approved_by: null, rejection_reason: null });
  return res.body.id as string;
}

/** Statuses the deployment's prompt.deployment.changed events reported, in order. */
const changes = (id: string) =>
  emit.mock.calls.filter(([, e]) => e.type === 'prompt.deployment.changed' && e.data.deployment_id === id).map(([, e]) => e.data.status);

async function systemAudit(s: Setup, id: string) {
  const log = await call('GET', withQuery('/v1/audit-log', { limit: 200 }), s.t.owner);
  return (log.body.entries as { actor_type: string; actor_id: string; action: string; resource_id: string }[])
    .filter((e) => e.resource_id === id)
    .reverse()
    .map((e) => `${e.actor_type}:${e.actor_id === s.ownerId ? 'owner' : e.actor_id}:${e.action}`);
}

/** Waits until the project's eval rule has scored `n` traces. */
const scored = (s: Setup, n: number) =>
  pollUntil(() => call('GET', withQuery('/v1/evals', { project_id: s.t.projectId, status: 'completed', limit: 100 }), s.t.owner), (r) => r.body.evals.length >= n, 300);

describe('a deployment walked through the whole table', () => {
  it('proposed → ab_running → ab_passed → (approve) shipped → monitoring → regressed → rolled_back, restoring the previous version', async () => {
    const s = await setup({ failing: 4 });
    await scored(s, 7);
    const id = await propose(s, improved(s.name));
    const passed = await until(s, id, ['ab_passed', 'ab_failed']);
    expect(passed.body, JSON.stringify(passed.body)).toMatchObject({ status: 'ab_passed', proposed_prompt: improved(s.name), rationale: 'Citing the policy answers the refund questions.' });
    expect(passed.body.ab_report).toMatchObject({ decision: 'pass', samples: { failing: 4, passing: 3 }, failure_rate_before: 1, failure_rate_after: 0 });
    expect(passed.body.ab_report.metrics).toEqual([expect.objectContaining({ metric: 'cites', baseline: 0, candidate: 1, delta: 1 })]);
    const replays = fake.requests.filter((r) => r.path === '/v1/chat/completions').length;
    expect(replays).toBe(1 + 2 * 7);

    expect((await call('POST', `/v1/prompts/deployments/${id}/rollback`, s.t.owner)).body.code).toBe('prompt_deployment.invalid_state');
    expect((await call('POST', `/v1/prompts/deployments/${id}/approve`, s.t.member)).status).toBe(403);
    const approved = await call('POST', `/v1/prompts/deployments/${id}/approve`, s.t.owner);
    expect(approved.body).toMatchObject({ status: 'shipped', approved_by: s.ownerId, to_version: 2 });
    expect(Date.parse(approved.body.shipped_at)).toBeGreaterThan(Date.parse(passed.body.created_at) - 1);
    expect((await active(s)).body).toMatchObject({ name: s.name, version: 2, content: improved(s.name) });

    const monitoring = await until(s, id, ['monitoring']);
    expect(monitoring.body.monitor_baseline).toBeCloseTo(3 / 7, 5);
    // Live traffic on version 2 that fails the rule: pass rate 0 against a baseline of 3/7.
    const live = Array.from({ length: 5 }, (_, i) => aTrace({ output: 'no idea', spans: [aSpan({ input: `live ${i}`, output: 'no idea', metadata: { prompt_name: s.name, prompt_version: 2 } })] }));
    await ingestTraces(ctx.app, s.t, live);
    const rolledBack = await until(s, id, ['rolled_back']);
    expect(rolledBack.body).toMatchObject({ status: 'rolled_back', approved_by: 'system:auto_rollback', regression_metric: 0, shipped_at: approved.body.shipped_at });
    expect(rolledBack.body.rolled_back_at).toEqual(expect.any(String));
    expect((await active(s)).body).toMatchObject({ version: 1, content: 'Answer briefly: {{input}}' });

    expect(changes(id)).toEqual(['proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed', 'rolled_back']);
    expect(await systemAudit(s, id)).toEqual([
      expect.stringMatching(/^user:.+:prompt_deployment\.create$/),
      'system:system:lifecycle:prompt_deployment.start_ab',
      'system:system:lifecycle:prompt_deployment.ab_pass',
      'user:owner:prompt_deployment.approve',
      'system:system:lifecycle:prompt_deployment.start_monitoring',
      'system:system:lifecycle:prompt_deployment.regress',
      'system:system:auto_rollback:prompt_deployment.auto_rollback',
    ]);
    const versions = await call('GET', withQuery(`/v1/prompts/${s.name}`, { project_id: s.t.projectId }), s.t.auth);
    expect(versions.body).toMatchObject({ active_version: { version: 1 }, versions: [{ version: 2, created_by: `deployment:${id}` }, { version: 1 }] });
  });

  it('proposes for a recurring cluster by itself and ships it with autoship; an owner rolls it back from monitoring', async () => {
    const s = await setup({ failing: 5, autoship: true, beforeLastFailure: () => nextProposal(improved('auto')) });
    const found = await pollUntil(() => call('GET', withQuery('/v1/prompts/deployments', { project_id: s.t.projectId }), s.t.owner), (r) => r.body.deployments[0]?.status === 'monitoring', 300);
    const d = found.body.deployments[0];
    expect(d).toMatchObject({ requested_by: 'system:recurring_cluster', cluster_signature: s.signature, approved_by: 'system:autoship', to_version: 2 });
    expect(d.shipped_at).toEqual(expect.any(String));
    expect(changes(d.id)).toEqual(['proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring']);
    expect(await systemAudit(s, d.id)).toContain('system:system:autoship:prompt_deployment.autoship');

    const rolledBack = await call('POST', `/v1/prompts/deployments/${d.id}/rollback`, s.t.owner);
    expect(rolledBack.body).toMatchObject({ status: 'rolled_back', approved_by: s.ownerId });
    expect((await active(s)).body.version).toBe(1);
    expect((await call('POST', `/v1/prompts/deployments/${d.id}/rollback`, s.t.owner)).status).toBe(409);
    expect((await call('POST', `/v1/prompts/deployments/${d.id}/reject`, s.t.owner, {})).status).toBe(409);
  });

  it('rolls back from shipped at once when the owner asks', async () => {
    const s = await setup({ failing: 2 });
    const id = await propose(s, improved(s.name));
    await until(s, id, ['ab_passed']);
    expect((await call('POST', `/v1/prompts/deployments/${id}/approve`, s.t.owner)).body.status).toBe('shipped');
    const res = await call('POST', `/v1/prompts/deployments/${id}/rollback`, s.t.owner);
    expect(res.body).toMatchObject({ status: 'rolled_back', approved_by: s.ownerId });
    expect(['shipped', 'monitoring']).toContain(changes(id).at(-2));
    expect((await active(s)).body.version).toBe(1);
  });
});

describe('failing and refused deployments', () => {
  it('fails the A/B test when the proposal changes nothing, and when the provider never answers JSON', async () => {
    const s = await setup({ failing: 2 });
    const id = await propose(s, 'Answer briefly, please: {{input}}');
    const failed = await until(s, id, ['ab_failed', 'ab_passed']);
    expect(failed.body).toMatchObject({ status: 'ab_failed', ab_report: { decision: 'fail', failure_rate_before: 1, failure_rate_after: 1 } });
    expect(changes(id)).toEqual(['proposed', 'ab_running', 'ab_failed']);

    fake.reset();
    const res = await call('POST', '/v1/prompts/deployments', s.t.owner, { project_id: s.t.projectId, cluster_signature: s.signature, prompt_name: s.name });
    const unusable = await until(s, res.body.id, ['ab_failed', 'ab_passed']);
    expect(unusable.body).toMatchObject({ status: 'ab_failed', proposed_prompt: '', ab_report: { decision: 'fail', reason: 'the provider answered no usable proposal twice' } });
    expect(fake.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(2);
    expect((await call('POST', `/v1/prompts/deployments/${res.body.id}/approve`, s.t.owner)).body.code).toBe('prompt_deployment.invalid_state');

    // A refusal no retry can fix (bad credentials) fails the test at once, saying why.
    fake.enqueue({ status: 401, message: 'bad key' });
    const refused = await call('POST', '/v1/prompts/deployments', s.t.owner, { project_id: s.t.projectId, cluster_signature: s.signature, prompt_name: s.name });
    const failedAtOnce = await until(s, refused.body.id, ['ab_failed', 'ab_passed']);
    expect(failedAtOnce.body.ab_report.reason).toMatch(/^provider failed: auth: /);
  });

  it('rejects in a non-terminal state, with and without a reason', async () => {
    const s = await setup({ failing: 2 });
    const first = await propose(s, improved('first'));
    await until(s, first, ['ab_passed']);
    const withReason = await call('POST', `/v1/prompts/deployments/${first}/reject`, s.t.owner, { reason: 'not this quarter' });
    expect(withReason.body).toMatchObject({ status: 'rejected', rejection_reason: 'not this quarter' });
    const second = await propose(s, improved('second'));
    await until(s, second, ['ab_passed']);
    const bare = await ctx.app.inject({ method: 'POST', url: `/v1/prompts/deployments/${second}/reject`, headers: s.t.owner });
    expect(bare.json()).toMatchObject({ status: 'rejected', rejection_reason: '' });
    expect((await active(s)).body.version).toBe(1);
  });

  it('answers 404, 400, 403, 402 and 409 as the spec says', async () => {
    const s = await setup({ failing: 1 });
    const body = { project_id: s.t.projectId, cluster_signature: s.signature, prompt_name: s.name };
    expect((await call('POST', '/v1/prompts/deployments', s.t.owner, { ...body, cluster_signature: 'f'.repeat(32) })).status).toBe(404);
    expect((await call('POST', '/v1/prompts/deployments', s.t.owner, { ...body, prompt_name: 'nope' })).status).toBe(404);
    expect((await call('POST', '/v1/prompts/deployments', s.t.owner, { ...body, prompt_name: 42 })).status).toBe(400);
    expect((await call('POST', `/v1/prompts/deployments/${randomUUID()}/approve`, s.t.owner)).status).toBe(404);
    expect((await call('GET', `/v1/prompts/deployments/${randomUUID()}`, s.t.owner)).status).toBe(404);
    expect((await call('POST', `/v1/prompts/deployments/${randomUUID()}/reject`, s.t.owner, { reason: 5 })).status).toBe(400);
    const key = await call('GET', '/v1/prompts/deployments', s.t.auth);
    expect(key).toMatchObject({ status: 403, body: { code: 'session_required' } });
    expect((await call('POST', '/v1/prompts/deployments', s.t.auth, body)).body.code).toBe('session_required');
    const pro = await tenant('pro');
    expect(await call('GET', '/v1/prompts/deployments', pro.owner)).toMatchObject({ status: 402, body: { code: 'plan_upgrade_required', required_plan: 'team' } });

    const id = await propose(s, improved('open'));
    expect((await call('POST', '/v1/prompts/deployments', s.t.owner, body)).body.code).toBe('prompt_deployment.open_exists');
    await until(s, id, ['ab_passed']);
    const list = await call('GET', withQuery('/v1/prompts/deployments', { status: 'ab_passed', project_id: s.t.projectId }), s.t.owner);
    expect(list.body).toMatchObject({ deployments: [{ id, prompt_name: s.name }], has_more: false, next_cursor: null });
    expect((await call('POST', `/v1/prompts/deployments/${id}/reject`, s.t.owner)).body.status).toBe('rejected');
  });
});
