import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runRepository } from '../../src/modules/datasets/runs-repo.js';
import { DatasetRunService, type RunEvals } from '../../src/modules/datasets/run-service.js';
import { notFound } from '../../src/platform/errors.js';
import { aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

/**
 * DatasetRunService driven directly, with the evals module behind a recorder that can fail on
 * demand and a queue that only records job ids: what a crash, a second worker or a lost job
 * does to a run, item by item.
 */
let ctx: TestContext;
let t: TestTenant;
let versionId: string;
let traceIds: string[];

/** Every scoreItem call by trace id; a call after `failAfter` calls throws, as a store outage would. */
const scored: string[] = [];
let failAfter = Infinity;
let versionGone = false;
const addedJobs: string[] = [];
let runs: DatasetRunService;

const ITEMS = 120;

beforeAll(async () => {
  ctx = await startApp();
  t = await createTenant(ctx.app);
  const traces = Array.from({ length: ITEMS }, (_, i) => aTrace({ output: i % 2 === 0 ? 'ok' : 'no' }));
  await ingestTraces(ctx.app, t, traces);
  traceIds = traces.map((trace) => trace.id);
  const rule = await ctx.app.inject({
    method: 'POST',
    url: '/v1/eval-rules',
    headers: t.auth,
    payload: { name: 'ok', metric_name: 'ok', config: { provider: 'builtin', preset: 'contains', params: { value: 'ok' } }, sampling_rate: 0, enabled: false },
  });
  versionId = rule.json().current_version_id;

  const { evals, datasets } = ctx.app.services;
  const recorder: RunEvals = {
    getVersion: (tenantId, id) => (versionGone ? Promise.reject(notFound('eval version')) : evals.getVersion(tenantId, id)),
    reserveQuota: (tenantId, count) => evals.reserveQuota(tenantId, count),
    scoreItem: async (tenantId, version, item) => {
      if (scored.length >= failAfter) throw new Error('store unavailable');
      scored.push(item.traceId);
      return evals.scoreItem(tenantId, version, item);
    },
  };
  const jobs = { add: async (_queue: string, _data: object, options: { jobId?: string } = {}) => void addedJobs.push(options.jobId!) };
  runs = new DatasetRunService(runRepository(ctx.stores.sql), datasets, recorder, jobs, { warn: () => {} }, { leaseMs: 30_000, redispatchAfterMs: 0 });
});

afterAll(async () => {
  await ctx?.close();
});

beforeEach(() => {
  scored.length = 0;
  addedJobs.length = 0;
  failAfter = Infinity;
  versionGone = false;
});

async function newRun() {
  const dataset = await ctx.app.services.datasets.create(t.tenantId, { name: 'processing', description: '' });
  await ctx.app.services.datasets.addItems(t.tenantId, dataset.id, traceIds.map((traceId) => ({ trace_id: traceId })));
  const run = await runs.create(t.tenantId, dataset.id, versionId);
  return { run, job: { tenant_id: t.tenantId, run_id: run.id }, read: () => runs.get(t.tenantId, dataset.id, run.id, 1_000, undefined) };
}

describe('dataset run processing', () => {
  it('resumes after a failure mid-run without scoring a committed item again or skipping one', async () => {
    const { job, read } = await newRun();
    failAfter = 60;
    await expect(runs.process(job)).rejects.toThrow('store unavailable');
    const interrupted = await read();
    expect([interrupted.status, interrupted.completed_count]).toEqual(['running', 50]);
    const committed = new Set(interrupted.results.map((r) => r.trace_id));

    failAfter = Infinity;
    scored.length = 0;
    // The failed attempt released its lease: the retry takes the run at once.
    expect(await runs.process(job)).toBe('completed');
    expect(scored.filter((id) => committed.has(id))).toEqual([]);
    expect(scored.length).toBe(ITEMS - 50);

    const done = await read();
    expect(done).toMatchObject({ status: 'completed', completed_count: ITEMS, pass_count: ITEMS / 2, fail_count: ITEMS / 2, error_count: 0 });
    expect(new Set(done.results.map((r) => r.item_id)).size).toBe(ITEMS);
  });

  it('leaves a run to the worker holding its lease, and takes it once the lease has lapsed', async () => {
    const { run, job, read } = await newRun();
    const repo = runRepository(ctx.stores.sql);
    expect(await repo.claim(t.tenantId, run.id, randomUUID(), 60_000)).toBeDefined();
    expect(await runs.process(job)).toBe('not_claimed');
    expect(scored).toEqual([]);

    await ctx.stores.sql`update eval_runs set lease_expires_at = now() - interval '1 second' where id = ${run.id}`;
    expect(await runs.process(job)).toBe('completed');
    expect(await runs.process(job)).toBe('not_claimed');
    expect((await read()).completed_count).toBe(ITEMS);
    expect(scored.length).toBe(ITEMS);
  });

  it('re-adds the job of an unfinished run nobody holds under a new job id, and none once it is done', async () => {
    const { run, job } = await newRun();
    expect(addedJobs).toEqual([`${run.id}-1`]);
    await runs.reconcile();
    expect(addedJobs).toEqual([`${run.id}-1`, `${run.id}-2`]);
    await runs.process(job);
    await runs.reconcile();
    expect(addedJobs.filter((id) => id.startsWith(run.id))).toEqual([`${run.id}-1`, `${run.id}-2`]);
  });

  it('fails a run whose eval version no longer exists, saying why', async () => {
    const { job, read } = await newRun();
    versionGone = true;
    expect(await runs.process(job)).toBe('failed');
    expect(await read()).toMatchObject({ status: 'failed', completed_count: 0, error_message: `eval version ${versionId} no longer exists` });
    expect(scored).toEqual([]);
  });
});
