import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobEnqueuer } from '../../src/jobs/enqueue.js';
import { jobOptions, PROCESSORS, QUEUE_NAMES, QUEUES, type QueueName } from '../../src/jobs/registry.js';
import { schedules } from '../../src/jobs/schedules.js';
import { newId } from '../../src/platform/ids.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';
import { getJson, ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startTestWorkers, TEST_REDIS_PREFIX } from '../helpers/workers.js';
import { aTrace } from '../builders/traces.js';

/**
 * Never called: compiled by the typecheck (npx tsc -p tsconfig.test.json), where each
 * @ts-expect-error line must be an error, i.e. JobEnqueuer.add refuses the payload of another shape.
 */
export function enqueueIsTypedByTheRegistry(jobs: JobEnqueuer, id: string): void {
  void jobs.add('evals', { tenant_id: id, eval_id: id });
  void jobs.addBulk('control', [{ tenant_id: id, action_id: id }]);
  void jobs.add('retention', {});
  // @ts-expect-error an evals job names its tenant
  void jobs.add('evals', { eval_id: id });
  // @ts-expect-error a webhooks payload is not an evals payload
  void jobs.add('evals', { tenant_id: id, dispatch_id: id });
  // @ts-expect-error a control job names its tenant
  void jobs.addBulk('control', [{ action_id: id }]);
  // @ts-expect-error a sweep is not per tenant: it carries nothing
  void jobs.add('metrics-rollup', { tenant_id: id });
  // @ts-expect-error nothing produces to the failures queue
  void jobs.add('failures', {});
  // @ts-expect-error no such queue
  void jobs.add('no-such-queue', {});
}

describe('job registry (tables)', () => {
  it('gives every per-entity payload a tenant_id; sweeps carry nothing', () => {
    for (const name of QUEUE_NAMES) {
      const schema = QUEUES[name].payload;
      if (!('shape' in schema)) continue; // failures: never produced
      const keys = Object.keys(schema.shape);
      expect(keys.length === 0 || keys.includes('tenant_id'), `${name}: ${keys.join(', ')}`).toBe(true);
    }
  });

  it('schedules only queues that have a processor, sweeps only', () => {
    const table = schedules({ retention: { intervalMs: 3_600_000 } });
    for (const name of Object.keys(table) as QueueName[]) {
      const schema = QUEUES[name].payload;
      expect(PROCESSORS[name], name).not.toBeNull();
      expect('shape' in schema ? Object.keys(schema.shape) : ['(not an object)'], name).toEqual([]);
    }
    expect(table.retention).toEqual({ every: 3_600_000 });
    expect(table['audit-anchor']).toEqual({ cron: '15 0 * * *' });
  });
});

describe('job registry (processing, real Redis)', () => {
  let ctx: TestContext;
  let evals: Queue;
  beforeAll(async () => {
    ctx = await startApp({ REDIS_PREFIX: TEST_REDIS_PREFIX });
    evals = new Queue('evals', { connection: { url: ctx.stores.config.redisUrl }, prefix: TEST_REDIS_PREFIX, defaultJobOptions: jobOptions('evals') });
  });
  afterAll(async () => {
    await evals?.obliterate({ force: true }).catch(() => {});
    await evals?.close();
    await ctx?.close();
  });

  const settled = (job: Job) =>
    pollUntil(
      async () => ({ state: await evals.getJobState(job.id!), job: await evals.getJob(job.id!) }),
      (r) => r.state === 'completed' || r.state === 'failed',
    );

  it('runs a job queued in the old shape (no tenant_id), and fails a malformed one at once, saying why', async () => {
    const t = await createTenant(ctx.app);
    const trace = aTrace();
    await ingestTraces(ctx.app, t, [trace]);
    // Stored and queued (new shape) while no worker runs; the queued job is then replaced by one of
    // the shape queued before payloads carried tenant_id, as a deploy finds it in Redis.
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/v1/eval',
      headers: t.auth,
      payload: { trace_id: trace.id, metric_name: 'quality', config: { provider: 'builtin', preset: 'contains', params: { values: ['x'] } } },
    });
    expect(res.statusCode, res.body).toBe(202);
    const evalId: string = res.json().eval_id;
    const queued = await evals.getJobs(['waiting']);
    expect(queued.map((j) => j.data)).toContainEqual({ tenant_id: t.tenantId, eval_id: evalId });
    await evals.drain();

    const old = await evals.add('score', { eval_id: evalId });
    const malformed = await evals.add('score', { tenant_id: t.tenantId, eval_id: 'not-an-id' });
    const unshaped = await evals.add('score', 'a string');
    const workers = await startTestWorkers(ctx, ['evals']);
    try {
      const oldRun = await settled(old);
      expect(oldRun.state).toBe('completed');
      expect(oldRun.job?.returnvalue).toEqual({ status: 'scored' });
      const ev = await getJson(ctx.app, t, `/v1/eval/${evalId}`);
      expect(ev.body).toMatchObject({ status: 'completed' });

      for (const job of [malformed, unshaped]) {
        const run = await settled(job);
        expect(run.state).toBe('failed');
        // Once, though the queue allows 5 attempts: a malformed payload could never succeed.
        expect(run.job?.attemptsMade).toBe(1);
        expect(run.job?.failedReason).toMatch(/^malformed evals payload: /);
      }
      const badId = (await settled(malformed)).job?.failedReason;
      expect(badId).toMatch(/eval_id/);
      // A well-formed job for an evaluation that does not exist is not malformed: it is skipped.
      const unknown = await settled(await evals.add('score', { tenant_id: t.tenantId, eval_id: newId() }));
      expect([unknown.state, unknown.job?.returnvalue]).toEqual(['completed', { status: 'skipped' }]);
    } finally {
      await workers.close();
    }
  });
});
