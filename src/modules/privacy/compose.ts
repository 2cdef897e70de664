import type { JobEnqueuer } from '../../jobs/enqueue.js';
import { appendAudit } from '../../platform/audit/chain.js';
import type { Sql } from '../../stores/pg.js';
import type { AppLogger } from '../../platform/log.js';
import { SubjectErasure, type ErasureModules } from './erasure.js';
import { SubjectExport, type ExportModules } from './export.js';
import { requestRepository } from './repo.js';
import { DataSubjectRequestService } from './service.js';

export interface PrivacyDeps {
  sql: Sql;
  jobs: Pick<JobEnqueuer, 'add'>;
  secretKey: Buffer;
  log: AppLogger;
  /** The other modules' services that hold data of traces, their ClickHouse tables included (traces, vectors). */
  modules: ErasureModules & ExportModules;
}

/** The privacy module's services, built once by the composition root (src/services.ts). */
export function buildPrivacyServices(deps: PrivacyDeps) {
  const repo = requestRepository(deps.sql);
  return new DataSubjectRequestService(
    repo,
    new SubjectErasure(repo, deps.modules),
    new SubjectExport(repo, deps.modules),
    // One job per request at a time: the reconcile's re-adds are ignored while a job waits, retries or runs.
    (tenantId, requestId) =>
      deps.jobs.add('data-subject-requests', { tenant_id: tenantId, request_id: requestId }, { deduplication: { id: `data-subject-request:${requestId}` } }),
    (tenantId, entry) => appendAudit(deps.sql, tenantId, entry),
    deps.secretKey,
    deps.log,
  );
}
