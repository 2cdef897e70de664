import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../src/jobs/workers.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { startApp, type TestContext } from '../helpers/app.js';
import { controlApi, type Team } from '../helpers/control-api.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { freePort } from '../helpers/server-process.js';
import { ingestTraces, withQuery } from '../helpers/trace-api.js';
import { ensureWebBuilt, launchChromium, screenshot, seriousA11yViolations, WAIT, signInForDevelopment } from '../helpers/web.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';

/**
 * The control-loop pages (prompt deployments, control actions, policies, model routes) against the
 * real workers and the fake OpenAI-compatible provider, as test/prompts/prompt-deployments.test.ts and
 * test/control/control-loop.test.ts drive them; the browser signs in with the development sign-in.
 */
const KEYWORD = 'CITED';
const ERROR = 'refund policy lookup failed';

let fake: FakeLlm;
let ctx: TestContext;
let workers: Workers;
let appUrl: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureWebBuilt();
  fake = await startFakeLlm();
  ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX, OPENAI_API_KEY: 'sk-server-default', OPENAI_BASE_URL: `${fake.url}/v1`, LOOPTRACE_PROVIDER_MAX_RETRIES: '0' });
  // No prompts-lifecycle: an approved deployment stays `shipped` instead of moving on to monitoring.
  workers = await startTestWorkers(ctx, ['evals', 'eval-rules', 'prompts', 'control', 'control-scan']);
  const port = await freePort();
  await ctx.app.listen({ port, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${port}`;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});

afterAll(async () => {
  await browser?.close();
  await workers?.close();
  await ctx?.close();
  await fake?.close();
});

const { tenant, call, created } = controlApi(() => ctx.app);

const signIn = (tenantId: string, role: 'owner' | 'member' | 'viewer') => signInForDevelopment(page, appUrl, tenantId, role);

/** As test/prompts/prompt-deployments.test.ts: a `contains` rule, a prompt, failing traces in one cluster, a proposal that passes its A/B test. */
async function deploymentAbPassed(t: Team): Promise<{ id: string; name: string }> {
  const name = `support-${randomUUID().slice(0, 8)}`;
  await created('/v1/eval-rules', t, { name: 'cites', metric_name: 'cites', project_id: t.projectId, config: { provider: 'builtin', preset: 'contains', params: { value: KEYWORD } } });
  const registered = await call('POST', '/v1/prompts', t.auth, { project_id: t.projectId, name, content: 'Answer briefly: {{input}}' });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const meta = { prompt_name: name, prompt_version: 1 };
  const failing = Array.from({ length: 2 }, (_, i) =>
    aTrace({ output: 'I cannot say.', spans: [aSpan({ input: `refund for order ${i}?`, output: 'I cannot say.', error: ERROR, metadata: meta })] }),
  );
  const passing = Array.from({ length: 3 }, (_, i) => aTrace({ output: `Policy ${KEYWORD}`, spans: [aSpan({ input: `hours ${i}?`, output: `Open 9-5 ${KEYWORD}`, metadata: meta })] }));
  await ingestTraces(ctx.app, t, [...passing, ...failing]);
  let signature = '';
  for (const trace of failing) {
    const cluster = await ctx.app.services.failures.record(t.tenantId, { projectId: t.projectId, type: 'Unknown', error: ERROR, traceId: trace.id, at: new Date() });
    signature = cluster.signature;
  }
  fake.enqueue({ malformed: JSON.stringify({ proposed_prompt: `Answer with the refund policy and end with ${KEYWORD}: {{input}}`, rationale: 'Citing the policy answers the refund questions.' }) });
  const proposed = await call('POST', '/v1/prompts/deployments', t.member, { project_id: t.projectId, cluster_signature: signature, prompt_name: name });
  expect(proposed.status, JSON.stringify(proposed.body)).toBe(201);
  const id = proposed.body.id as string;
  const passed = await pollUntil(() => call('GET', `/v1/prompts/deployments/${id}`, t.owner), (r) => ['ab_passed', 'ab_failed'].includes(r.body.status), 300);
  expect(passed.body.status, JSON.stringify(passed.body)).toBe('ab_passed');
  return { id, name };
}

describe('prompt deployments', () => {
  let t: Team;
  let deployment: { id: string; name: string };

  beforeAll(async () => {
    t = await tenant('team');
    deployment = await deploymentAbPassed(t);
  });

  it('a viewer sees the A/B report but cannot approve: the button says why, and forced, the API refuses with 403', async () => {
    await signIn(t.tenantId, 'viewer');
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Prompt deployments' }).click();
    await page.waitForURL(`${appUrl}/prompt-deployments`, WAIT);
    const row = page.locator('table.list tbody tr', { hasText: deployment.name });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('A/B test passed: awaiting approval');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'prompt-deployments');

    await row.getByRole('link', { name: deployment.name }).click();
    await page.waitForURL(`${appUrl}/prompt-deployments/${deployment.id}`, WAIT);
    const approve = page.getByRole('button', { name: 'Approve and ship' });
    await approve.waitFor(WAIT);
    expect(await approve.isDisabled()).toBe(true);
    const reason = await page.locator(`[id="${await approve.getAttribute('aria-describedby')}"]`).textContent();
    expect(reason).toContain('needs the owner role (you are viewer)');
    expect(await page.getByRole('button', { name: 'Reject' }).isDisabled()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Forced past the disabled button, the API still decides: its 403 is shown as it gave it.
    await approve.evaluate((button) => button.removeAttribute('disabled'));
    await approve.click();
    const refusal = page.getByRole('alert');
    await refusal.getByText('Not allowed.').waitFor(WAIT);
    expect(await refusal.textContent()).toContain('403');
    expect((await call('GET', `/v1/prompts/deployments/${deployment.id}`, t.owner)).body.status).toBe('ab_passed');
  });

  it('an owner sees the A/B report side by side and approves: the deployment ships', async () => {
    await signIn(t.tenantId, 'owner');
    await page.goto(`${appUrl}/prompt-deployments/${deployment.id}`);
    const report = page.getByRole('table', { name: /Per-metric average scores/ });
    await report.waitFor(WAIT);
    expect(await report.locator('tbody tr').first().textContent()).toMatch(/cites\s*0\.00\s*1\.00\s*\+1\.00/);
    await page.getByText('Before: v1, the prompt at proposal time').waitFor(WAIT);
    expect(await page.locator('.io').textContent()).toContain(`end with ${KEYWORD}: {{input}}`);
    // Only what the state allows: rollback needs a shipped deployment.
    expect(await page.getByRole('button', { name: 'Roll back' }).isDisabled()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'prompt-deployment');

    const approve = page.getByRole('button', { name: 'Approve and ship' });
    expect(await approve.isDisabled()).toBe(false);
    await approve.focus();
    await page.keyboard.press('Enter');
    await page.locator('.state-line', { hasText: 'Shipped' }).waitFor(WAIT);
    expect(await page.locator('.facts').first().textContent()).toContain('v1 → v2');
    expect(await approve.isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Roll back' }).isDisabled()).toBe(false);
    expect((await call('GET', `/v1/prompts/deployments/${deployment.id}`, t.owner)).body).toMatchObject({ status: 'shipped', to_version: 2 });
  });
});

describe('control actions, policies and model routes', () => {
  let t: Team;
  let escalation: string;

  beforeAll(async () => {
    // As test/control/control-loop.test.ts: a trace scored below threshold is retried three times, then escalated to an owner.
    t = await tenant('team');
    const rule = await created('/v1/eval-rules', t, { name: 'mentions Paris', metric_name: 'mentions_Paris', config: { provider: 'builtin', preset: 'contains', params: { value: 'Paris' } } });
    const route = await created('/v1/model-routes', t, { name: 'mini then bigger', model: { provider: 'openai', model: 'gpt-4o-mini' }, fallbacks: [{ provider: 'openai', model: 'gpt-4o' }] });
    await created('/v1/policies', t, { name: 'retry capital questions', project_id: t.projectId, trigger: { eval_rule_id: rule.id }, steps: [{ type: 'retry' }] });
    await created('/v1/policies', t, { name: 'fall back on timeouts', project_id: t.projectId, enabled: false, trigger: { failure_types: ['Timeout'] }, steps: [{ type: 'fallback_model', model_route_id: route.id }], require_approval: true });
    const trace = aTrace({ output: 'Lyon' });
    await ingestTraces(ctx.app, t, [trace]);
    const found = await pollUntil(
      () => call('GET', withQuery('/v1/control/actions', { trace_id: trace.id }), t.owner),
      (r) => (r.body.actions as { type: string }[]).some((a) => a.type === 'escalate'),
      400,
    );
    escalation = (found.body.actions as { id: string; type: string }[]).find((a) => a.type === 'escalate')!.id;
  });

  it('lists the approval queue first; an owner approves an escalation from its page', async () => {
    await signIn(t.tenantId, 'owner');
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Control loop' }).click();
    await page.waitForURL(`${appUrl}/control/actions`, WAIT);
    const queue = page.getByRole('region', { name: 'Awaiting approval' });
    await queue.locator('tbody tr', { hasText: 'Escalation' }).waitFor(WAIT);
    expect(await queue.locator('tbody tr').count()).toBe(1);
    await page.getByRole('region', { name: 'All actions' }).getByRole('cell', { name: 'Retry', exact: true }).first().waitFor(WAIT);
    expect(await page.getByRole('region', { name: 'All actions' }).locator('tbody tr').count()).toBe(4);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'control-actions');

    // A retry's page: the diff against the original span, decisions disabled for its state.
    const retry = page.getByRole('region', { name: 'All actions' }).locator('tbody tr', { has: page.getByRole('cell', { name: 'Retry', exact: true }) });
    await retry.first().getByRole('link').first().click();
    await page.getByRole('heading', { name: /^Retry/ }).waitFor(WAIT);
    await page.getByRole('heading', { name: 'Diff against the original span' }).waitFor(WAIT);
    await page.locator('section', { hasText: 'Diff against the original span' }).getByText(/Output similarity|still running/).waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'control-action');

    await page.goto(`${appUrl}/control/actions/${escalation}`);
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor(WAIT);
    await page.getByText('retry_threshold_exceeded').first().waitFor(WAIT);
    await approve.click();
    await page.getByRole('heading', { name: /Escalation\s*Approved/ }).waitFor(WAIT);
    expect((await call('GET', `/v1/control/actions/${escalation}`, t.owner)).body.status).toBe('approved');
    // Decided: both decisions are now disabled, saying why.
    expect(await page.getByRole('button', { name: 'Reject' }).isDisabled()).toBe(true);
  });

  it('lists the policies and the model routes', async () => {
    await page.getByRole('navigation', { name: 'Control loop' }).getByRole('link', { name: 'Policies' }).click();
    await page.waitForURL(`${appUrl}/control/policies`, WAIT);
    await page.locator('table.list tbody tr', { hasText: 'retry capital questions' }).waitFor(WAIT);
    expect(await page.locator('table.list tbody tr', { hasText: 'fall back on timeouts' }).textContent()).toContain('owner approves');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'policies');

    await page.getByRole('navigation', { name: 'Control loop' }).getByRole('link', { name: 'Model routes' }).click();
    const route = page.locator('table.list tbody tr', { hasText: 'mini then bigger' });
    await route.waitFor(WAIT);
    expect(await route.textContent()).toContain('openai/gpt-4o-mini');
    expect(await route.textContent()).toContain('openai/gpt-4o');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'model-routes');
  });

  it('an owner creates and edits a model route and a policy from their forms, and deletes one after confirming', async () => {
    type Route = { id: string; name: string; project_id: string | null; model: object; fallbacks: object[] };
    type Stored = { id: string; name: string; [field: string]: unknown };
    const routeNamed = async (name: string) => ((await call('GET', '/v1/model-routes?limit=100', t.owner)).body.model_routes as Route[]).find((r) => r.name === name);
    const policyNamed = async (name: string) => ((await call('GET', '/v1/policies?limit=100', t.owner)).body.policies as Stored[]).find((p) => p.name === name);

    // A model route: every field of the create body; fallbacks as JSON, checked in the page before sending.
    await page.goto(`${appUrl}/control/model-routes`);
    const createRoute = page.getByRole('form', { name: 'Create a model route' });
    await createRoute.waitFor(WAIT);
    await page.locator('table.list tbody tr', { hasText: 'mini then bigger' }).waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await createRoute.getByLabel('Name').fill('haiku first');
    await createRoute.getByLabel('Project').selectOption(t.projectId);
    await createRoute.getByLabel(/^Provider/).selectOption('anthropic');
    await createRoute.getByLabel(/^Model/).fill('claude-3-5-haiku');
    await createRoute.getByLabel(/^Fallbacks/).fill('[{"provider": "openai", "model": "gpt-4o-mini"},');
    await createRoute.getByRole('button', { name: 'Create model route' }).click();
    expect(await createRoute.getByRole('alert').textContent()).toContain('Fallbacks:');
    expect(await routeNamed('haiku first')).toBeUndefined();
    await createRoute.getByLabel(/^Fallbacks/).fill('[{"provider": "openai", "model": "gpt-4o-mini"}]');
    await createRoute.getByRole('button', { name: 'Create model route' }).click();
    await page.getByText('Created haiku first.').waitFor(WAIT);
    const route = await routeNamed('haiku first');
    expect(route).toMatchObject({ project_id: t.projectId, model: { provider: 'anthropic', model: 'claude-3-5-haiku' }, fallbacks: [{ provider: 'openai', model: 'gpt-4o-mini' }] });

    // Edit one field: PATCH keeps the others.
    const routeRow = page.locator('table.list tbody tr', { hasText: 'haiku first' });
    await routeRow.getByRole('button', { name: 'Edit haiku first' }).click();
    const editRoute = page.getByRole('form', { name: 'Edit haiku first' });
    await editRoute.waitFor(WAIT);
    expect(await editRoute.getByLabel(/^Fallbacks/).inputValue()).toContain('gpt-4o-mini');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await editRoute.getByLabel(/^Model/).fill('claude-3-5-sonnet');
    await editRoute.getByRole('button', { name: 'Save model route' }).click();
    await page.getByText('Saved haiku first.').waitFor(WAIT);
    expect(await routeNamed('haiku first')).toMatchObject({ id: route!.id, project_id: t.projectId, model: { provider: 'anthropic', model: 'claude-3-5-sonnet' }, fallbacks: [{ provider: 'openai', model: 'gpt-4o-mini' }] });
    expect(await routeRow.textContent()).toContain('anthropic/claude-3-5-sonnet');

    // A policy: trigger and steps as JSON; a refusal of the API is shown as it gave it.
    await page.getByRole('navigation', { name: 'Control loop' }).getByRole('link', { name: 'Policies' }).click();
    const createPolicy = page.getByRole('form', { name: 'Create a policy' });
    await createPolicy.waitFor(WAIT);
    await createPolicy.getByLabel('Name').fill('escalate rate limits');
    await createPolicy.getByLabel('Project').selectOption(t.projectId);
    await createPolicy.getByLabel(/^Trigger/).fill('failure_types: RateLimit');
    await createPolicy.getByLabel(/^Steps/).fill('[{"type": "retry"}, {"type": "retry"}]');
    await createPolicy.getByLabel(/^Max retry depth/).fill('2');
    await createPolicy.getByLabel('Require owner approval').check();
    await createPolicy.getByRole('button', { name: 'Create policy' }).click();
    expect(await createPolicy.getByRole('alert').textContent()).toContain('Trigger:');
    await createPolicy.getByLabel(/^Trigger/).fill('{"failure_types": ["RateLimit"]}');
    await createPolicy.getByRole('button', { name: 'Create policy' }).click();
    await createPolicy.getByRole('alert').getByText('each step type at most once').waitFor(WAIT);
    expect(await createPolicy.getByRole('alert').textContent()).toContain('400');
    await createPolicy.getByLabel(/^Steps/).fill(`[{"type": "fallback_model", "model_route_id": "${route!.id}"}, {"type": "escalate"}]`);
    await createPolicy.getByRole('button', { name: 'Create policy' }).click();
    await page.getByText('Created escalate rate limits.').waitFor(WAIT);
    const policy = await policyNamed('escalate rate limits');
    expect(policy).toMatchObject({
      project_id: t.projectId,
      enabled: true,
      trigger: { failure_types: ['RateLimit'] },
      steps: [{ type: 'fallback_model', model_route_id: route!.id }, { type: 'escalate' }],
      max_retry_depth: 2,
      max_cascade_depth: 5,
      require_approval: true,
    });

    const policyRow = page.locator('table.list tbody tr', { hasText: 'escalate rate limits' });
    await policyRow.getByRole('button', { name: 'Edit escalate rate limits' }).click();
    const editPolicy = page.getByRole('form', { name: 'Edit escalate rate limits' });
    await editPolicy.waitFor(WAIT);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await editPolicy.getByLabel(/^Max cascade depth/).fill('8');
    await editPolicy.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved escalate rate limits.').waitFor(WAIT);
    expect(await policyNamed('escalate rate limits')).toMatchObject({
      id: policy!.id,
      trigger: { failure_types: ['RateLimit'] },
      steps: [{ type: 'fallback_model', model_route_id: route!.id }, { type: 'escalate' }],
      max_retry_depth: 2,
      max_cascade_depth: 8,
      require_approval: true,
    });
    expect(await policyRow.textContent()).toContain('2 retries, depth 8');

    // Delete, owner only, after a confirm step: the first click only asks.
    await policyRow.getByRole('button', { name: 'Delete escalate rate limits' }).click();
    expect((await call('GET', `/v1/policies/${policy!.id}`, t.owner)).status).toBe(200);
    await page.getByRole('group', { name: 'Delete escalate rate limits' }).getByRole('button', { name: 'Delete now' }).click();
    await policyRow.waitFor({ state: 'detached', ...WAIT });
    expect((await call('GET', `/v1/policies/${policy!.id}`, t.owner)).status).toBe(404);
    // The 204 has no body: a success, not an error notice.
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('a viewer sees the queue but the decisions are disabled, saying why', async () => {
    await signIn(t.tenantId, 'viewer');
    await page.goto(`${appUrl}/control/actions/${escalation}`);
    const reject = page.getByRole('button', { name: 'Reject' });
    await reject.waitFor(WAIT);
    expect(await reject.isDisabled()).toBe(true);
    expect(await page.locator('.decision-reason').first().textContent()).toContain('needs the owner role (you are viewer)');

    // The policy and model route forms: every write control disabled, the reason next to it.
    const reasonOf = async (control: ReturnType<Page['getByRole']>) => page.locator(`[id="${await control.getAttribute('aria-describedby')}"]`).textContent();
    await page.goto(`${appUrl}/control/policies`);
    const createPolicy = page.getByRole('form', { name: 'Create a policy' });
    await page.locator('table.list tbody tr', { hasText: 'retry capital questions' }).waitFor(WAIT);
    expect(await createPolicy.getByRole('button', { name: 'Create policy' }).isDisabled()).toBe(true);
    expect(await createPolicy.getByLabel('Name').isDisabled()).toBe(true);
    expect(await reasonOf(createPolicy)).toContain('needs the owner or member role (you are viewer)');
    const deletePolicy = page.getByRole('button', { name: 'Delete retry capital questions' });
    expect(await deletePolicy.isDisabled()).toBe(true);
    expect(await reasonOf(deletePolicy)).toContain('needs the owner role (you are viewer)');
    await page.getByRole('button', { name: 'Edit retry capital questions' }).click();
    const editPolicy = page.getByRole('form', { name: 'Edit retry capital questions' });
    expect(await editPolicy.getByRole('button', { name: 'Save policy' }).isDisabled()).toBe(true);
    expect(await reasonOf(editPolicy)).toContain('Editing policies: needs the owner or member role (you are viewer)');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.goto(`${appUrl}/control/model-routes`);
    const createRoute = page.getByRole('form', { name: 'Create a model route' });
    await page.locator('table.list tbody tr', { hasText: 'mini then bigger' }).waitFor(WAIT);
    expect(await createRoute.getByRole('button', { name: 'Create model route' }).isDisabled()).toBe(true);
    expect(await reasonOf(createRoute)).toContain('needs the owner or member role (you are viewer)');
    const deleteRoute = page.getByRole('button', { name: 'Delete mini then bigger' });
    expect(await deleteRoute.isDisabled()).toBe(true);
    expect(await reasonOf(deleteRoute)).toContain('needs the owner role (you are viewer)');
    expect(await seriousA11yViolations(page)).toEqual([]);
  });
});
