import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { appendAudit } from '../../platform/audit/chain.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import type { Sql } from '../../stores/pg.js';
import type { AppLogger } from '../../platform/log.js';
import { vectorErasureRepository } from '../search/erasure-repo.js';
import { VectorErasure } from '../search/erasure-service.js';
import { subjectTraceRepository } from '../traces/subject-repo.js';
import { SubjectTraceService } from '../traces/subject-service.js';
import { SubjectErasure, type ErasureModules } from './erasure.js';
import { SubjectExport, type ExportModules } from './export.js';
import { requestRepository } from './repo.js';
import { DataSubjectRequestService } from './service.js';

export interface PrivacyDeps {
  sql: Sql;
  ch: ClickHouseStore;
  jobs: Pick<JobEnqueuer, 'add'>;
  secretKey: Buffer;
  log: AppLogger;
  /** The other modules' services that hold data of traces (traces and vectors are built here). */
  modules: Omit<ErasureModules, 'traces' | 'vectors'> & Omit<ExportModules, 'traces'>;
}

/** The privacy module's services, built once by the composition root (src/services.ts). */
export function buildPrivacyServices(deps: PrivacyDeps) {
  const repo = requestRepository(deps.sql);
  // The traces and search modules' own services for their ClickHouse tables.
  const subjectTraces = new SubjectTraceService(subjectTraceRepository(deps.ch));
  const vectors = new VectorErasure(vectorErasureRepository(deps.ch));
  const modules = { ...deps.modules, traces: subjectTraces, vectors };
  return new DataSubjectRequestService(
    repo,
    new SubjectErasure(repo, modules),
    new SubjectExport(repo, modules),
    // One job per request at a time: the reconcile's re-adds are ignored while a job waits, retries or runs.
    (tenantId, requestId) =>
      deps.jobs.add('data-subject-requests', { tenant_id: tenantId, request_id: requestId }, { deduplication: { id: `data-subject-request:${requestId}` } }),
    (tenantId, entry) => appendAudit(deps.sql, tenantId, entry),
    deps.secretKey,
    deps.log,
  );
}
