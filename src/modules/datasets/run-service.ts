import { z } from 'zod';
import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { toIso } from '../../platform/schemas.js';
import type { EvalVersion, ItemScore } from '../evals/schemas.js';
import { mapConcurrent } from './concurrency.js';
import type { DispatchedRun, EvalRunRow, RunRepository, RunResultRow } from './runs-repo.js';
import type { DatasetRunJob, EvalRun, RunResult } from './schemas.js';
import type { DatasetService } from './service.js';

/** What dataset runs need of the evals module (EvalService). */
export interface RunEvals {
  getVersion(tenantId: string, versionId: string): Promise<EvalVersion>;
  /** Counts `count` evaluations against the monthly quota; 402 eval_quota_exceeded beyond it. */
  reserveQuota(tenantId: string, count: number): Promise<void>;
  /** Provider failures come back in `error`; a store failure throws. */
  scoreItem(tenantId: string, version: EvalVersion, item: { traceId: string; spanId: string | null; expected: string | null }): Promise<ItemScore>;
}

export interface RunTiming {
  /** A worker's hold on a run; renewed every third of it while the worker is alive. */
  leaseMs: number;
  /** An unfinished run nobody holds is dispatched again once its last dispatch is this old. */
  redispatchAfterMs: number;
}

/**
 * With a 30 s lease a dead worker's run is free again 30 s after its last renewal; the reconcile
 * (every 30 s) re-adds it once its last dispatch is a minute old. So a run whose worker died, or
 * whose job Redis lost, resumes within about 1.5 minutes, and a job merely waiting behind others
 * gets a duplicate at most once a minute (a duplicate finds the run held or done, and returns).
 */
const DEFAULT_TIMING: RunTiming = { leaseMs: 30_000, redispatchAfterMs: 60_000 };
/** Items scored and then written per transaction, and scored concurrently within a chunk. */
const CHUNK_ITEMS = 50;
const SCORES_IN_FLIGHT = 8;
const REDISPATCH_BATCH = 500;

const jobIdOf = (runId: string, dispatch: number) => `${runId}-${dispatch}`;
const runCursor = z.object({ id: z.guid() });
const resultCursor = z.object({ item_id: z.guid() });

export function toEvalRun(row: EvalRunRow): EvalRun {
  const judged = row.pass_count + row.fail_count;
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    dataset_id: row.dataset_id,
    eval_version_id: row.eval_version_id,
    status: row.status,
    item_count: row.item_count,
    completed_count: row.completed_count,
    pass_count: row.pass_count,
    fail_count: row.fail_count,
    error_count: row.error_count,
    pass_rate: judged === 0 ? null : row.pass_count / judged,
    error_message: row.error_message,
    created_at: row.created_at.toISOString(),
    started_at: toIso(row.started_at),
    completed_at: toIso(row.completed_at),
  };
}

const toResult = ({ created_at, ...row }: RunResultRow): RunResult => ({ ...row, created_at: created_at.toISOString() });

export type RunOutcome = 'completed' | 'failed' | 'not_claimed' | 'lease_lost';

export class DatasetRunService {
  constructor(
    private readonly repo: RunRepository,
    private readonly datasets: DatasetService,
    private readonly evals: RunEvals,
    private readonly jobs: Pick<JobEnqueuer, 'add'>,
    private readonly log: { warn(obj: object, msg: string): void },
    private readonly timing: RunTiming = DEFAULT_TIMING,
  ) {}

  /**
   * The run takes the dataset's items as they are now, and the quota for them is reserved before
   * anything is written (402 leaves no run behind). The job is added after the commit; if Redis
   * does not take it, the run is still answered, and the reconcile dispatches it.
   */
  async create(tenantId: string, datasetId: string, versionId: string): Promise<EvalRun> {
    await this.evals.getVersion(tenantId, versionId);
    const expected = await this.datasets.itemCount(tenantId, datasetId);
    if (expected > 0) await this.evals.reserveQuota(tenantId, expected);
    const run = await this.repo.create(tenantId, newId(), datasetId, versionId, expected);
    if (!run) throw notFound('dataset');
    await this.dispatch(run).catch((err: unknown) => this.log.warn({ err, run_id: run.id }, 'dataset run not enqueued; the reconcile will'));
    return toEvalRun(run);
  }

  /** Newest first. */
  async list(tenantId: string, datasetId: string, limit: number, cursor: string | undefined) {
    const before = cursor ? decodeCursor(cursor, runCursor).id : null;
    await this.datasets.get(tenantId, datasetId);
    const page = toPage(await this.repo.list(tenantId, datasetId, before, limit + 1), limit, (last) => ({ id: last.id }));
    return { runs: page.items.map(toEvalRun), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /** The run with one page of its results, by item id. */
  async get(tenantId: string, datasetId: string, runId: string, resultsLimit: number, resultsCursor: string | undefined) {
    const after = resultsCursor ? decodeCursor(resultsCursor, resultCursor).item_id : null;
    const run = await this.repo.find(tenantId, datasetId, runId);
    if (!run) throw notFound('eval run');
    const page = toPage(await this.repo.results(run.id, after, resultsLimit + 1), resultsLimit, (last) => ({ item_id: last.item_id }));
    return { ...toEvalRun(run), results: page.items.map(toResult), results_has_more: page.has_more, results_next_cursor: page.next_cursor };
  }

  /**
   * The `dataset-runs` job. Safe to run twice, concurrently, or again after a crash: the lease
   * keeps a second worker from scoring the same items, and results are written with their
   * counters in one statement that skips items already written, so a restarted run scores only
   * what has no result yet (an item whose result died with its worker is scored again, once).
   */
  async process({ tenant_id: tenantId, run_id: runId }: DatasetRunJob): Promise<RunOutcome> {
    const token = newId();
    const run = await this.repo.claim(tenantId, runId, token, this.timing.leaseMs);
    if (!run) return 'not_claimed';
    // Between chunk writes (which renew it too): a chunk of slow judges may outlast the lease.
    const heartbeat = setInterval(() => {
      this.repo.renewLease(runId, token, this.timing.leaseMs).catch((err: unknown) => this.log.warn({ err, run_id: runId }, 'dataset run lease not renewed'));
    }, this.timing.leaseMs / 3);
    try {
      const version = await this.versionOf(run);
      if (!version) {
        await this.repo.fail(runId, token, `eval version ${run.eval_version_id} no longer exists`);
        return 'failed';
      }
      let after: string | null = null;
      for (;;) {
        const items = await this.repo.unscoredItems(runId, after, CHUNK_ITEMS);
        if (items.length === 0) break;
        const scores = await mapConcurrent(items, SCORES_IN_FLIGHT, (item) =>
          this.evals.scoreItem(tenantId, version, { traceId: item.trace_id, spanId: item.span_id, expected: item.expected }),
        );
        const results = scores.map((score, i) => ({ ...score, item_id: items[i]!.item_id }));
        if (!(await this.repo.recordResults(runId, token, results, this.timing.leaseMs))) return 'lease_lost';
        after = items[items.length - 1]!.item_id;
      }
      return (await this.repo.complete(runId, token)) ? 'completed' : 'lease_lost';
    } catch (err) {
      // The job's retry (a store failure, say) may take the run at once rather than wait out the lease.
      await this.repo.releaseLease(runId, token).catch(() => {});
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Data-subject erasure (src/modules/privacy): the runs' copies of items taken from these traces
   * and their results; run counters are adjusted to match. Idempotent.
   */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseItemsOfTraces(tenantId, traceIds);
  }

  /** The `dataset-runs-reconcile` job: re-adds the jobs of unfinished runs nobody is working on. */
  async reconcile(): Promise<{ redispatched: number }> {
    const stale = await this.repo.redispatchStale(this.timing.redispatchAfterMs, REDISPATCH_BATCH);
    for (const run of stale) await this.dispatch(run);
    return { redispatched: stale.length };
  }

  private async dispatch(run: DispatchedRun): Promise<void> {
    const job: DatasetRunJob = { tenant_id: run.tenant_id, run_id: run.id };
    await this.jobs.add('dataset-runs', job, { jobId: jobIdOf(run.id, run.dispatch_count) });
  }

  /** Undefined when the version is gone for good: the run can never succeed. */
  private async versionOf(run: EvalRunRow): Promise<EvalVersion | undefined> {
    try {
      return await this.evals.getVersion(run.tenant_id, run.eval_version_id);
    } catch (err) {
      if (err instanceof AppError && err.status === 404) return undefined;
      throw err;
    }
  }
}
