import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext } from '../helpers/app.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';
import { aTrace } from '../builders/traces.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startAppWithWorkers(['evals', 'eval-rules']);
});
afterAll(async () => ctx?.close());

describe('remediation re-scores (EvalService.rescoreRemediation)', () => {
  it("re-scores an action's output with every rule that scored the trace, pointing at the action and the original", async () => {
    const t = await createTenant(ctx.app);
    const rule = await ctx.app.inject({
      method: 'POST',
      url: '/v1/eval-rules',
      headers: t.auth,
      payload: { name: 'mentions Paris', metric_name: 'paris', config: { provider: 'builtin', preset: 'contains', params: { value: 'Paris' } } },
    });
    expect(rule.statusCode).toBe(201);
    const trace = aTrace({ output: 'Lyon' });
    await ingestTraces(ctx.app, t, [trace]);
    const fresh = await pollUntil(
      () => getJson(ctx.app, t, '/v1/evals', { trace_id: trace.id }),
      (r) => r.body.evals.length === 1 && r.body.evals[0].status === 'completed',
      200,
    );
    const original = fresh.body.evals[0];
    expect(original.score).toBe(0);

    const actionId = randomUUID();
    const ids = await ctx.app.services.evals.rescoreRemediation(t.tenantId, { traceId: trace.id, sourceActionId: actionId, output: 'Paris, of course' });
    expect(ids).toHaveLength(1);
    const rescored = await pollUntil(
      () => getJson(ctx.app, t, '/v1/evals', { source_action_id: actionId }),
      (r) => r.body.evals.length === 1 && r.body.evals[0].status === 'completed',
      200,
    );
    expect(rescored.body.evals[0]).toMatchObject({
      id: ids[0],
      context: 'remediation',
      source_action_id: actionId,
      original_evaluation_id: original.id,
      rule_id: original.rule_id,
      eval_version_id: original.eval_version_id,
      scored_output: 'Paris, of course',
      score: 1,
      passed: true,
    });
    // The fresh evaluation is untouched, and a listing of fresh ones does not show the re-score.
    expect((await getJson(ctx.app, t, '/v1/evals', { trace_id: trace.id, context: 'fresh' })).body.evals.map((e: { id: string }) => e.id)).toEqual([original.id]);
    expect(await ctx.app.services.evals.ofAction(t.tenantId, actionId)).toHaveLength(1);
  });

  it('creates nothing for a trace no rule has scored', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    expect(await ctx.app.services.evals.rescoreRemediation(t.tenantId, { traceId: trace.id, sourceActionId: randomUUID(), output: 'x' })).toEqual([]);
  });
});
