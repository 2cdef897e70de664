import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { EvalRun } from '../datasets/schemas.js';
import type { DatasetRunService } from '../datasets/service.js';
import type { CiRunRepository, CiRunRow } from './repo.js';
import type { CiRun, CreateCiRun } from './schemas.js';

/**
 * A CI gate is a dataset run with a bar. The gate's pass rate counts every item of the run, so an
 * item the eval could not score holds a release back rather than vanishing from the rate.
 */
function toCiRun(row: CiRunRow, run: EvalRun): CiRun {
  const done = run.status === 'completed';
  const passRate = done ? (run.item_count === 0 ? 1 : run.pass_count / run.item_count) : null;
  return {
    id: row.id,
    dataset_id: row.dataset_id,
    eval_version_id: run.eval_version_id,
    run_id: run.id,
    status: run.status,
    item_count: run.item_count,
    completed_count: run.completed_count,
    min_pass_rate: row.min_pass_rate,
    pass_rate: passRate,
    passed: run.status === 'failed' ? false : passRate === null ? null : passRate >= row.min_pass_rate,
    created_at: row.created_at.toISOString(),
    completed_at: run.completed_at,
  };
}

export class CiService {
  constructor(
    private readonly repo: CiRunRepository,
    private readonly runs: Pick<DatasetRunService, 'create' | 'get'>,
  ) {}

  async create(tenantId: string, body: CreateCiRun): Promise<CiRun> {
    const run = await this.runs.create(tenantId, body.dataset_id, body.eval_version_id);
    const row = await this.repo.insert({ id: newId(), tenant_id: tenantId, dataset_id: body.dataset_id, run_id: run.id, min_pass_rate: body.min_pass_rate });
    return toCiRun(row, run);
  }

  async get(tenantId: string, id: string): Promise<CiRun> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('CI run');
    const { results: _results, results_has_more: _more, results_next_cursor: _next, ...run } = await this.runs.get(tenantId, row.dataset_id, row.run_id, 1, undefined);
    return toCiRun(row, run);
  }
}
