import type { ControlActionService, ControlSignals } from '../control/service.js';
import type { DatasetRunService, DatasetService } from '../datasets/service.js';
import type { EvalService } from '../evals/service.js';
import type { FailureService } from '../failures/service.js';
import type { FeedbackService } from '../feedback/service.js';
import type { TraceRegistry } from '../ingest/service.js';
import type { PromptDeploymentService } from '../prompts/service.js';
import type { VectorErasure } from '../search/service.js';
import type { SubjectTraceService, TraceSubject } from '../traces/service.js';
import type { RequestRepository, RequestRow, RequestTrace } from './repo.js';
import { ZERO_COUNTS, type RequestCounts } from './schemas.js';

/** Traces per statement, in every store. */
export const TRACE_BATCH = 1_000;
/** A subject found again after an erasure round (traces stored meanwhile) is erased again, this many rounds at most. */
const MAX_ROUNDS = 3;

/** Every module that stores something of a trace, through its own service. */
export interface ErasureModules {
  traces: Pick<SubjectTraceService, 'find' | 'countSpans' | 'eraseTraces' | 'remaining' | 'purge'>;
  vectors: Pick<VectorErasure, 'countVectors' | 'eraseTraces' | 'remaining' | 'purge'>;
  registry: Pick<TraceRegistry, 'eraseTraces'>;
  evals: Pick<EvalService, 'countForTraces' | 'eraseTraces'>;
  feedback: Pick<FeedbackService, 'countForTraces' | 'eraseTraces'>;
  datasets: Pick<DatasetService, 'countItemsForTraces' | 'eraseTraces'>;
  datasetRuns: Pick<DatasetRunService, 'eraseTraces'>;
  failures: Pick<FailureService, 'eraseTraces'>;
  controlActions: Pick<ControlActionService, 'eraseTraces'>;
  controlSignals: Pick<ControlSignals, 'eraseTraces'>;
  promptDeployments: Pick<PromptDeploymentService, 'eraseTraces'>;
}

const idsOf = (refs: readonly RequestTrace[]) => refs.map((r) => r.trace_id);

/**
 * One erasure, safe to run again from any point: the traces found are remembered with the
 * request (data_subject_request_traces) and move found → counted → erased, so a retry counts
 * nothing twice and still reaches traces whose ClickHouse rows an earlier attempt already took.
 * Every delete is idempotent. Order per batch: ClickHouse (vectors, spans, trace rows), then
 * Postgres starting with the trace registry, without which nothing new can attach to a trace
 * (feedback, evaluations, dataset items all look it up there first).
 */
export class SubjectErasure {
  constructor(
    private readonly repo: RequestRepository,
    private readonly modules: ErasureModules,
  ) {}

  async run(row: RequestRow, subject: TraceSubject): Promise<RequestCounts> {
    await this.repo.expireExportsOf(row.tenant_id, row.subject_hash);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const added = await this.repo.addTraces(row.id, await this.modules.traces.find(row.tenant_id, subject));
      await this.countFound(row);
      await this.eraseCounted(row);
      if (added === 0) break;
    }
    await this.verify(row);
    await this.modules.traces.purge();
    await this.modules.vectors.purge();
    await this.repo.expireExportsOf(row.tenant_id, row.subject_hash);
    return { ...ZERO_COUNTS, ...(await this.repo.counts(row.id)) };
  }

  private async countFound(row: RequestRow): Promise<void> {
    const m = this.modules;
    for (;;) {
      const refs = await this.repo.traces(row.id, 'found', null, TRACE_BATCH);
      if (refs.length === 0) return;
      const ids = idsOf(refs);
      const [spans, vectors, evaluations, feedback, datasetItems] = await Promise.all([
        m.traces.countSpans(row.tenant_id, refs),
        m.vectors.countVectors(row.tenant_id, refs),
        m.evals.countForTraces(row.tenant_id, ids),
        m.feedback.countForTraces(row.tenant_id, ids),
        m.datasets.countItemsForTraces(row.tenant_id, ids),
      ]);
      const counts = { traces: refs.length, spans, vectors, evaluations, feedback, dataset_items: datasetItems };
      await this.repo.markCounted(row.id, ids, counts);
    }
  }

  private async eraseCounted(row: RequestRow): Promise<void> {
    for (;;) {
      const refs = await this.repo.traces(row.id, 'counted', null, TRACE_BATCH);
      if (refs.length === 0) return;
      await this.eraseBatch(row.tenant_id, refs);
      await this.repo.markErased(row.id, idsOf(refs));
    }
  }

  private async eraseBatch(tenantId: string, refs: readonly RequestTrace[]): Promise<void> {
    const m = this.modules;
    const ids = idsOf(refs);
    await m.vectors.eraseTraces(tenantId, refs);
    await m.traces.eraseTraces(tenantId, refs);
    await m.registry.eraseTraces(tenantId, ids);
    await m.evals.eraseTraces(tenantId, ids);
    await m.controlActions.eraseTraces(tenantId, ids);
    await m.controlSignals.eraseTraces(tenantId, ids);
    await m.failures.eraseTraces(tenantId, ids);
    await m.datasetRuns.eraseTraces(tenantId, ids);
    await m.datasets.eraseTraces(tenantId, ids);
    await m.feedback.eraseTraces(tenantId, ids);
    await m.promptDeployments.eraseTraces(tenantId, ids);
  }

  /**
   * ClickHouse rows of the request's traces that are back (a rollup or an embedding that read a
   * trace before it was erased and wrote after) are erased once more; rows that keep coming back
   * fail the attempt, which the job retries.
   */
  private async verify(row: RequestRow): Promise<void> {
    let after: string | null = null;
    for (;;) {
      const refs = await this.repo.traces(row.id, null, after, TRACE_BATCH);
      if (refs.length === 0) return;
      if ((await this.remaining(row.tenant_id, refs)) > 0) {
        await this.eraseBatch(row.tenant_id, refs);
        if ((await this.remaining(row.tenant_id, refs)) > 0) throw new Error('rows of erased traces reappeared in ClickHouse; the attempt is retried');
      }
      after = refs[refs.length - 1]!.trace_id;
    }
  }

  private async remaining(tenantId: string, refs: readonly RequestTrace[]): Promise<number> {
    const [traces, vectors] = await Promise.all([this.modules.traces.remaining(tenantId, refs), this.modules.vectors.remaining(tenantId, refs)]);
    return traces + vectors;
  }
}
